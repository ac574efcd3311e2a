//! The command line. `xdsck PATH...` is `xdsck check PATH...`: the check arguments are also
//! accepted at the top level, and a subcommand name as first argument wins.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `xdsck --version`: which xdsck, and which Envoy its rules follow.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (rules follow Envoy 1.40)");

#[derive(Debug, Parser)]
#[command(
    name = "xdsck",
    version = VERSION,
    about = "Find Envoy filter chains that collide, shadow each other or can never be reached.",
    after_help = "Exit status: 0 nothing at or above --fail-on, 1 something is, 2 an input could not be read or loaded, or the arguments are wrong.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `xdsck PATH...`, the same as `xdsck check PATH...`.
    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check Envoy configuration: config_dump, bootstrap, listeners, xDS responses, CiliumEnvoyConfig.
    Check(CheckArgs),
    /// List every rule: code, name, default severity, summary.
    Rules {
        /// How the rules are listed.
        #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
        format: RulesFormat,
    },
    /// Explain a rule: what it finds, why it matters, an example, the fix.
    Explain {
        /// A code (`XDS101`) or a name (`duplicate-filter-chain-match`).
        rule: String,
    },
    /// Trace a connection: the listener, what Envoy's matcher sees, each level's decision, and
    /// the filter chain it reaches. Exit status 1 when Envoy closes the connection (no chain
    /// matches and there is no default chain), 0 when a chain takes it.
    Trace(TraceArgs),
    /// Print a listener's match graph (Envoy's filter-chain index) as DOT, Mermaid or SVG. A chain
    /// drawn above the last level matches anything at the levels below it.
    Graph(GraphArgs),
    /// What a change does to traffic: for each listener of OLD and NEW (paired by name, else by
    /// address), every class of connections whose filter chain changes and every class of
    /// requests whose virtual host, route or action changes, each with one witness (the `xdsck
    /// trace` flags that replay it), and the findings new and fixed. A side is files or a
    /// running proxy. Exit status 1 when traffic moves or findings are new, 0 otherwise.
    Diff(DiffArgs),
    /// Check a running proxy: its admin /config_dump (http://, unix://) or, as a read-only xDS
    /// observer that ACKs everything and never NACKs, its control plane (grpc://, grpcs://,
    /// grpc+unix://). A bare socket path is probed. With --watch, print each change.
    Attach(AttachArgs),
    /// Serve a validating admission webhook (admission.k8s.io/v1, HTTPS) for
    /// CiliumEnvoyConfig and CiliumClusterwideEnvoyConfig: what Envoy would reject comes back
    /// as warnings, or is denied with --strict; everything else as warnings.
    Webhook(WebhookArgs),
    /// Gateway API YAML in: the listener and Gateway conditions a Cilium version sets, the
    /// CiliumEnvoyConfig it renders, and the findings of every check on that CiliumEnvoyConfig.
    Gateway(GatewayArgs),
    /// Print a shell completion script: `xdsck completions bash > /etc/bash_completion.d/xdsck`.
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), `xdsck manpage > xdsck.1`; with DIR, write it and a page per
    /// subcommand (`xdsck-check.1`, `xdsck-trace.1`, ...), the pages the first one names.
    Manpage {
        /// The directory the pages are written into (it must exist).
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The Cilium version to model: 1.19.5, 1.19.6 (= 1.19.7), 1.20 or main.
    #[arg(long, value_name = "VERSION", default_value = "main")]
    pub cilium: String,
    /// Print only the rendered CiliumEnvoyConfigs (a `v1` List, JSON, which is YAML): pipes
    /// into `xdsck -`.
    #[arg(long)]
    pub render: bool,
    /// The report, as `check` makes it. `--format text` prints the conditions per Gateway and
    /// listener before the findings; `json` is one object with the conditions, the rendered
    /// CiliumEnvoyConfigs and the findings; `sarif`, `github`, `concise` and `openreports` are
    /// the findings alone.
    #[command(flatten)]
    pub report: ReportArgs,
    /// Gateway API YAML or JSON (streams, `kubectl get … -o yaml` Lists); `-` is stdin.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// Where to listen (HTTPS).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8443")]
    pub listen: std::net::SocketAddr,
    /// The server's certificate chain (PEM), as the ValidatingWebhookConfiguration's caBundle
    /// trusts it.
    #[arg(long, value_name = "PEM")]
    pub tls_cert: PathBuf,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "PEM")]
    pub tls_key: PathBuf,
    /// Deny an object with error findings (what Envoy rejects). Without it, nothing is denied
    /// and every finding is a warning.
    #[arg(long)]
    pub strict: bool,
    /// With --strict, deny CECs owned by a Gateway too. By default they are only warned about:
    /// the Cilium operator writes them and would retry a denied write forever.
    #[arg(long)]
    pub deny_gateway_owned: bool,
    /// The largest AdmissionReview accepted, in bytes (the API server's own object limit is
    /// about 3 MiB).
    #[arg(long, value_name = "N", default_value_t = 4 << 20)]
    pub max_request_bytes: usize,
    /// Seconds a client may take for its TLS handshake, for a request head, for a body.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub request_timeout: f64,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// `unix:///var/run/cilium/envoy/sockets/admin.sock`, `http://127.0.0.1:9901` (query
    /// parameters go to /config_dump), `grpc+unix:///var/run/cilium/envoy/sockets/xds.sock`,
    /// `grpc://host:port`, `grpcs://host:port`, or a bare socket path.
    #[arg(value_name = "ADDRESS")]
    pub address: String,
    /// xDS only: a stream per type, LDS, RDS and CDS (Cilium's default "split" mode), or one
    /// ADS stream for the three.
    #[arg(long = "type", value_enum, default_value_t = XdsType::Lds)]
    pub xds_type: XdsType,
    /// xDS only: the incremental protocol (Delta xDS, as Istio's istiod defaults to), over ADS.
    #[arg(long)]
    pub delta: bool,
    /// Write what was received into DIR (created if missing), for a bug report: `xds.json`, the
    /// list of DiscoveryResponses (listeners, the route tables they name, clusters) as JSON, or
    /// `config_dump.json` from an admin API. `xdsck check DIR` gives the same findings. With
    /// --watch, rewritten at each update.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// xDS only: the node id presented. Cilium serves node IP 127.0.0.1 only.
    #[arg(long, default_value = "host~127.0.0.1~no-id~localdomain")]
    pub node_id: String,
    /// Keep running and print the findings that appear and disappear at each update.
    #[arg(long)]
    pub watch: bool,
    /// With --watch: serve Prometheus metrics of each analysis on http://ADDR/metrics, and
    /// /healthz (e.g. `0.0.0.0:9967`; port 0 picks a free one, printed on stderr). The node
    /// agent: see the README's "Fleet" section.
    #[arg(long, value_name = "ADDR", requires = "watch")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Admin only, with --watch: seconds between two fetches of /config_dump.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub interval: f64,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Seconds to wait for a connection and for the first answer (admin: for each piece of it);
    /// xDS: then as long again for the route tables the listeners name and the clusters, after
    /// which the check runs with what came and says what did not.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
    /// grpcs:// only: PEM file of the CA to trust (default: the system's roots).
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// grpcs:// only: client certificate (PEM), with --tls-key.
    #[arg(long, value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// grpcs:// only: the client certificate's private key (PEM).
    #[arg(long, value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// grpcs:// only: the name to verify in the server's certificate, if not the host.
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum XdsType {
    /// A stream per type: `ListenerDiscoveryService/StreamListeners`, then
    /// `RouteDiscoveryService` and `ClusterDiscoveryService` where the server serves them.
    Lds,
    /// The Aggregated Discovery Service (`AggregatedDiscoveryService/StreamAggregatedResources`,
    /// or `DeltaAggregatedResources` with --delta), asking for listeners, the route tables they
    /// name and every cluster.
    Ads,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The configuration: any inputs `check` reads (`-` reads standard input), taken as one
    /// Envoy's — a listener's RDS table and the clusters may come from other files than the
    /// listener (its LDS, RDS and CDS answers saved apart).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The listener, by name; by default the one bound to --dst.
    #[arg(long, allow_hyphen_values = true)]
    pub listener: Option<String>,
    /// The proxy, of a peer's map of several (`egctl config envoy-proxy all`: `ns/pod`).
    #[arg(long, allow_hyphen_values = true)]
    pub proxy: Option<String>,
    /// The local address the connection arrives on (as restored by original_dst / PROXY).
    #[arg(long, value_name = "IP:PORT")]
    pub dst: std::net::SocketAddr,
    /// The client's address (as PROXY protocol reports it, if used).
    #[arg(long, value_name = "IP:PORT")]
    pub src: Option<std::net::SocketAddr>,
    /// The real TCP peer, when PROXY protocol changes the source. Defaults to --src's IP.
    #[arg(long, value_name = "IP")]
    pub direct_src: Option<std::net::IpAddr>,
    /// What the client sends; the listener's inspectors decide what Envoy sees.
    /// Default: tls when --sni or --alpn is given, else raw.
    #[arg(long, value_enum, conflicts_with = "transport_protocol")]
    pub client: Option<ClientKind>,
    /// Give the matcher's attributes exactly, with no listener-filter derivation.
    #[arg(long, value_name = "PROTOCOL")]
    pub transport_protocol: Option<String>,
    /// The SNI the client sends (or, with --transport-protocol, the server name as set). A
    /// value may start with `-`.
    #[arg(long, allow_hyphen_values = true)]
    pub sni: Option<String>,
    /// The client's ALPN list, in its order (comma-separated).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub alpn: Vec<String>,
    /// Follow an HTTP request past the chain: its Host (`""` is an empty Host; a Host may
    /// start with `-`, `--host -bar.foo.com`, which Envoy routes). The chain's route table,
    /// virtual host and route are then traced too.
    #[arg(long, allow_hyphen_values = true)]
    pub host: Option<String>,
    /// The request's path, with any query string (default `/`; needs --host).
    #[arg(long = "path", value_name = "PATH", requires = "host", allow_hyphen_values = true)]
    pub request_path: Option<String>,
    /// The request's method.
    #[arg(long, default_value = "GET", requires = "host", allow_hyphen_values = true)]
    pub method: String,
    /// A request header, `NAME:VALUE`; repeat for more (a name given twice sends both values).
    #[arg(long = "header", value_name = "NAME:VALUE", requires = "host", allow_hyphen_values = true)]
    pub headers: Vec<String>,
    /// How the trace is written.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    /// A TLS ClientHello, with --sni and --alpn.
    Tls,
    /// Plaintext HTTP/1.1 (what http_inspector detects as `http/1.1`).
    Http1,
    /// Plaintext HTTP/2 with prior knowledge (detected as `h2c`).
    H2c,
    /// Bytes that are neither TLS nor HTTP.
    Raw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// For people: each level of the matcher and its decision, then the route.
    Text,
    /// One object: the connection, the steps, the chain and (with --host) the `http` part.
    Json,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The configuration (any input `check` reads; `-` reads standard input).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// The listener, by name; may be left out when the input has only one.
    #[arg(long)]
    pub listener: Option<String>,
    /// The proxy, of a peer's map of several (`egctl config envoy-proxy all`: `ns/pod`).
    #[arg(long, allow_hyphen_values = true)]
    pub proxy: Option<String>,
    /// How the graph is written.
    #[arg(long, value_enum, default_value_t = GraphFormat::Dot)]
    pub format: GraphFormat,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// OLD and NEW: each an input `check` reads (a file, a directory, `-`) or a running proxy's
    /// address as `attach` takes it (http://, unix://, grpc://, grpc+unix://, a socket path).
    /// For several inputs per side, use --old and --new instead.
    #[arg(value_name = "OLD NEW", num_args = 0..=2, conflicts_with_all = ["old", "new"])]
    pub sides: Vec<String>,
    /// The inputs of the version before (one Envoy's, as `check --one-envoy` reads them).
    #[arg(long, value_name = "INPUT", num_args = 1.., requires = "new")]
    pub old: Vec<String>,
    /// The inputs of the version after.
    #[arg(long, value_name = "INPUT", num_args = 1.., requires = "old")]
    pub new: Vec<String>,
    /// What makes the exit status 1: connections or requests that land elsewhere (`traffic`),
    /// findings the new version adds (`findings`); `never` for 0 whatever changes.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "traffic,findings")]
    pub fail_on: Vec<DiffFailOn>,
    /// Choose witnesses' addresses inside these ranges where their class allows (a pod CIDR, to
    /// replay them from a test pod).
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',')]
    pub prefer_addresses: Vec<ipnet::IpNet>,
    /// Seconds to wait for a running proxy's answer.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// How the answer is written.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
}

/// What `diff`'s exit status reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFailOn {
    /// Connections or requests that land elsewhere, listeners added or removed.
    Traffic,
    /// Findings the new version has and the old one does not.
    Findings,
    /// Nothing: exit 0 whatever the change does.
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
    /// A Mermaid flowchart, as GitHub renders it in Markdown.
    Mermaid,
    /// A picture, laid out by xdsck (up to 2000 nodes).
    Svg,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files and directories to check; `-` reads standard input. A directory is walked for its
    /// `.json`, `.yaml` and `.yml` files (past .gitignore, hidden files and `exclude`).
    #[arg(required_unless_present = "show_settings", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print the settings in force — which xdsck.toml (or none), `exclude`, the selection and
    /// severity overrides, each rule reported and at which severity, and the files the PATHs
    /// give — and check nothing.
    #[arg(long)]
    pub show_settings: bool,
    /// The files are one Envoy's (its config_dump beside new listeners or routes, its LDS, RDS
    /// and CDS answers saved apart): route tables are checked against the clusters of all of
    /// them. Without it each file is an Envoy of its own, and lends no other its clusters.
    #[arg(long)]
    pub one_envoy: bool,
    /// The paths were found, not chosen (by pre-commit, a shell glob, `find`): each is read as
    /// a directory walk reads its files. One holding no Envoy configuration (a package.json, a
    /// workflow) is an info, not `XDS007`; one that `exclude` in xdsck.toml names is passed by.
    #[arg(long)]
    pub found: bool,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// What `check`, `attach` and `gateway` share: when the run fails, the colours, and how much
/// input is read.
#[derive(Debug, Args)]
pub struct OutcomeArgs {
    /// The lowest severity that makes the exit status 1.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Colour the text output: `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
    /// The largest input accepted, in bytes: a file, a config_dump, an xDS response (encoded).
    /// A larger one is not read past the limit and is an `XDS009 input-limit` finding (with
    /// `attach --watch`, a warning).
    #[arg(long, value_name = "N", default_value_t = xdsck_core::load::DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
}

/// What `check`, `attach` and `gateway` share: how the report looks, which rules are in force,
/// when it fails, and how much input is read to make it.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// How the report is written.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to this file instead of standard output (the exit status is the same).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub outcome: OutcomeArgs,
    /// The rules to report, replacing the default (every rule) and the config file's `select`:
    /// codes (`XDS301`), code prefixes (`XDS3`), names (`wildcard-overlap`) or `ALL`.
    #[arg(long, value_name = "RULE", value_delimiter = ',', help_heading = "Rule selection")]
    pub select: Option<Vec<String>>,
    /// Rules to report in addition to those selected.
    #[arg(long, value_name = "RULE", value_delimiter = ',', help_heading = "Rule selection")]
    pub extend_select: Vec<String>,
    /// Rules not to report. Where a select and an ignore both match, the more specific wins
    /// (`--select XDS2 --ignore XDS201`); an ignore wins a tie.
    #[arg(long, value_name = "RULE", value_delimiter = ',', help_heading = "Rule selection")]
    pub ignore: Vec<String>,
    /// Report a rule at another severity: `--severity XDS301=warning` (repeatable; the most
    /// specific wins).
    #[arg(long, value_name = "RULE=LEVEL", help_heading = "Rule selection")]
    pub severity: Vec<String>,
    /// The config file (default: `xdsck.toml` in the working directory or the nearest parent).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config", help_heading = "Rule selection")]
    pub config: Option<PathBuf>,
    /// Read no config file.
    #[arg(long, help_heading = "Rule selection")]
    pub no_config: bool,
    /// Report only the findings not recorded in this baseline (see --write-baseline).
    #[arg(long, value_name = "FILE", help_heading = "Baseline")]
    pub baseline: Option<PathBuf>,
    /// Record today's findings as the baseline (by rule, listener, chains and a fingerprint,
    /// not by line); the run then passes unless an input could not be read.
    #[arg(long, value_name = "FILE", conflicts_with = "baseline", help_heading = "Baseline")]
    pub write_baseline: Option<PathBuf>,
    /// Print how many findings each rule has instead of the findings (text or json).
    #[arg(long)]
    pub statistics: bool,
    /// Print the findings only: no per-input lines, no tally (text).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// For people: each finding with its place in the input, Envoy's words and notes.
    Text,
    /// The stable JSON report (`version` 1), for scripts.
    Json,
    /// SARIF 2.1.0, for code-scanning upload.
    Sarif,
    /// GitHub Actions annotations (`::error file=...`), one line per finding.
    Github,
    /// OpenReports `Report`s (openreports.io/v1alpha1) in a `v1` `List`, for `kubectl apply -f`.
    Openreports,
    /// One line per finding: `path:line:col: CODE [severity] message`.
    Concise,
}

impl From<Format> for xdsck_core::report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Text => Self::Text,
            Format::Json => Self::Json,
            Format::Sarif => Self::Sarif,
            Format::Github => Self::Github,
            Format::Openreports => Self::OpenReports,
            Format::Concise => Self::Concise,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Exit 1 on errors (what Envoy rejects) only.
    Error,
    /// Exit 1 on warnings and errors (the default).
    Warning,
    /// Exit 1 on any finding.
    Info,
    /// Exit 0 whatever is found (2 still when an input cannot be read).
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// Colour a terminal, unless NO_COLOR is set.
    Auto,
    /// Colour always, also into a pipe or a file.
    Always,
    /// Never colour.
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    /// A table: code, name, default severity, summary.
    Text,
    /// `{"version": 1, "rules": [...]}` with each rule's explanation, for scripts.
    Json,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every subcommand says what it is, and every value of an enumerated
    /// argument (each format) what it means: `--help` and the man pages are all a user reads.
    #[test]
    fn every_argument_and_value_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
                // clap_complete's shells are named by their names.
                let enumerated = arg.get_action().takes_values() && id != "shell";
                for v in arg.get_possible_values().into_iter().filter(|_| enumerated) {
                    if v.get_help().is_none() && !arg.is_hide_possible_values_set() {
                        missing.push(format!("{path} {id}={}", v.get_name()));
                    }
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_name() == "help" {
                    continue;
                }
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {}", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "xdsck", &mut missing);
        assert!(missing.is_empty(), "without a description: {missing:#?}");
    }
}
