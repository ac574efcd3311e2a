//! What Envoy checks when it builds what it has parsed and validated, beyond listeners and route
//! tables: a cluster's discovery type against its load balancer and endpoints, a server TLS
//! context's certificates, the clusters a bootstrap's xDS sources name. Read only where Envoy
//! builds them from the input (a bootstrap, a CDS response), not from a config_dump, which
//! records what Envoy already built.

use std::borrow::Cow;
use std::sync::Arc;

use thin_vec::ThinVec;

use super::{Address, Text};
use crate::source::{Casing, join_field, join_field_index, join_index};

/// A cluster as Envoy builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterBuild<'a> {
    /// `name`.
    pub name: Text<'a>,
    /// Where the Cluster message is ([`ClusterBuild::pointer`]); every other pointer of the
    /// build is below it.
    pub place: ClusterPlace,
    /// `type`, the service discovery type (`None`: a `cluster_type` extension).
    pub discovery: Option<Discovery>,
    /// `lb_policy`, by its number (0, `ROUND_ROBIN`, when unset); `None` when
    /// `load_balancing_policy` chooses instead.
    pub lb_policy: Option<i32>,
    /// `load_assignment` is set.
    pub load_assignment: bool,
    /// How many `load_assignment.endpoints` (localities) it has.
    pub localities: u32,
    /// Every `load_assignment.endpoints[].lb_endpoints[]`, locality after locality: one list
    /// a word wide, each endpoint knowing its place (a tenant's table names three clusters of
    /// one endpoint each; a list per locality and a pointer string per endpoint were three
    /// allocations a cluster).
    pub endpoints: ThinVec<Endpoint<'a>>,
    /// Its transport socket's TLS certificates, when it has a TLS context. Boxed, as the
    /// status ranges are a `ThinVec`: most clusters have neither, and a tenant's route table
    /// names three (at 100k tenants 300k builds; 152 bytes each with these in place).
    pub tls: Option<Box<TlsCertificates<'a>>>,
    /// The status ranges of its HTTP health checks (`expected_statuses`,
    /// `retriable_statuses`), which Envoy checks when it builds the health checker.
    pub status_ranges: ThinVec<StatusRange>,
}

impl ClusterBuild<'_> {
    /// JSON pointer of the Cluster message.
    pub fn pointer(&self) -> String {
        match &self.place {
            ClusterPlace::At(p) => p.to_string(),
            ClusterPlace::Listed(list, i) => join_index(list, *i as usize),
        }
    }
}

/// Where a cluster is in its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterPlace {
    /// At this pointer (a resource of its own).
    At(Box<str>),
    /// Item `.1` of the list at `.0` (a bootstrap's `static_resources.clusters`): the list's
    /// pointer is one string its clusters share (a tenant bootstrap lists 300k clusters, and a
    /// pointer each was 300k allocations).
    Listed(Arc<str>, u32),
}

/// One `Int64Range` of an HTTP health check's statuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRange {
    /// JSON pointer of the range, below the cluster's.
    pub pointer: String,
    /// `retriable_statuses` (else `expected_statuses`).
    pub retriable: bool,
    /// `start` (0 when not given).
    pub start: i64,
    /// `end` (0 when not given).
    pub end: i64,
}

/// `Cluster.DiscoveryType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    /// `STATIC` (the default).
    Static,
    /// `STRICT_DNS`.
    StrictDns,
    /// `LOGICAL_DNS`.
    LogicalDns,
    /// `EDS`.
    Eds,
    /// `ORIGINAL_DST`.
    OriginalDst,
}

impl Discovery {
    /// By the enum's number.
    pub fn from_number(n: u32) -> Option<Self> {
        Some(match n {
            0 => Discovery::Static,
            1 => Discovery::StrictDns,
            2 => Discovery::LogicalDns,
            3 => Discovery::Eds,
            4 => Discovery::OriginalDst,
            _ => return None,
        })
    }
}

/// One `LbEndpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint<'a> {
    /// `endpoint.address`, when given (`endpoint_name` endpoints have none either).
    pub address: Option<Address<'a>>,
    /// `endpoint.address` is there, set or not: an empty Address is PGV's to refuse.
    pub address_given: bool,
    /// Where it is: [`Endpoint::pointer`] spells it when a finding needs it.
    pub place: EndpointPlace,
}

/// An endpoint's place in its cluster: the locality's and its own position, and how the three
/// objects on the way spell their keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointPlace {
    /// Its locality's position in `load_assignment.endpoints`.
    pub locality: u32,
    /// Its position in the locality's `lb_endpoints`.
    pub index: u32,
    /// The casings of the cluster (`load_assignment`), the load assignment (`endpoints`) and
    /// the locality (`lb_endpoints`).
    pub casings: [Casing; 3],
}

impl Endpoint<'_> {
    /// JSON pointer of the LbEndpoint, below the cluster's.
    pub fn pointer(&self) -> String {
        let EndpointPlace { locality, index, casings: [cluster, assignment, lbs] } = self.place;
        let list = join_field(&join_field("", cluster, "load_assignment"), assignment, "endpoints");
        join_field_index(&join_index(&list, locality as usize), lbs, "lb_endpoints", index as usize)
    }
}

/// A TLS context's certificates, as Envoy looks for them. Its lists are `ThinVec`s (a word
/// each): nearly all are empty, and a tenant listener has 100k TLS chains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsCertificates<'a> {
    /// Whether the context names any certificate: inline, by SDS, from a provider or a
    /// selector.
    pub any: bool,
    /// SDS secrets named without an `sds_config`: Envoy looks them up among the bootstrap's
    /// static secrets. Each with its pointer below the transport socket.
    pub static_secrets: ThinVec<(String, Cow<'a, str>)>,
    /// Some secret comes by SDS from a config source (an `sds_config`).
    pub by_sds: bool,
    /// The inline `tls_certificates`: each one's pointer below the transport socket, its
    /// certificate chain and its private key.
    pub inline: ThinVec<(String, Source, Source)>,
    /// The PEM text Envoy parses when it builds the context: inline certificate chains, private
    /// keys and trusted CAs (`inline_string`).
    pub pem: ThinVec<Pem<'a>>,
    /// The `oid` of each OTHER_NAME subject alt name matcher of its validation context, with the
    /// matcher's pointer below the transport socket.
    pub other_name_oids: ThinVec<(String, Cow<'a, str>)>,
}

/// An inline PEM text of a TLS context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pem<'a> {
    /// JSON pointer of the `DataSource`, below the transport socket.
    pub pointer: String,
    /// What Envoy reads from it.
    pub holds: PemHolds,
    /// The text.
    pub text: Cow<'a, str>,
}

/// What a TLS context's PEM text is to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PemHolds {
    /// `tls_certificates[].certificate_chain`.
    CertificateChain,
    /// `tls_certificates[].private_key`.
    PrivateKey,
    /// `validation_context.trusted_ca`.
    TrustedCa,
}

/// A `DataSource` as Envoy reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Not given.
    Absent,
    /// Given without a source (`{}`): PGV refuses it.
    Unset,
    /// A source that is empty (`inline_string: ""`): to Envoy, no data.
    Empty,
    /// A source with something in it.
    Given,
}

/// A bootstrap's own parts Envoy checks when it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootstrapBuild<'a> {
    /// `static_resources.secrets`, by name.
    pub static_secrets: Vec<Cow<'a, str>>,
    /// The clusters `dynamic_resources` reaches its management server through.
    pub config_sources: Vec<ConfigSourceUse<'a>>,
    /// `dynamic_resources.cds_config` is set (clusters come by CDS).
    pub cds: bool,
    /// `cds_config.api_config_source.api_type`, as a number, with the pointer of the
    /// `api_config_source`.
    pub cds_api_type: Option<(u32, String)>,
    /// `node.id` and `node.cluster`, as given (empty when not).
    pub node: (Cow<'a, str>, Cow<'a, str>),
    /// Where `node` is (or would be): the bootstrap's pointer.
    pub pointer: String,
    /// The types of `bootstrap_extensions`' typed configs.
    pub extensions: Vec<Cow<'a, str>>,
    /// `admin.address`, with its pointer: Envoy binds it when it starts.
    pub admin_address: Option<(String, Address<'a>)>,
}

/// A cluster an xDS source of the bootstrap names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSourceUse<'a> {
    /// JSON pointer of the value naming the cluster.
    pub pointer: String,
    /// The cluster named.
    pub cluster: Cow<'a, str>,
    /// Which source.
    pub source: ConfigSourceKind,
}

/// Which of a bootstrap's xDS sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSourceKind {
    /// `cds_config.api_config_source`: Envoy requires a static cluster that is not EDS.
    Cds,
    /// `ads_config`: Envoy requires a cluster its gRPC client knows.
    Ads,
}
