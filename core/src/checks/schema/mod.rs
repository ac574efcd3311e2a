//! The rules of Envoy's schema and of what Envoy builds from it (`XDS105`, `XDS118`–`XDS128`,
//! `XDS215`, `XDS216`, `XDS302`, `XDS305`): fields, values, PGV constraints, extensions,
//! addresses, clusters, TLS contexts, and what of an input is not read against the schema.

pub(crate) mod cilium_protojson;
pub(crate) mod constraint_violation;
pub(crate) mod ignored_field;
pub(crate) mod invalid_address;
pub(crate) mod invalid_cluster;
pub(crate) mod invalid_config_source;
pub(crate) mod invalid_setting;
pub(crate) mod invalid_tls_context;
pub(crate) mod invalid_value;
pub(crate) mod missing_certificate;
pub(crate) mod repeated_field;
pub(crate) mod skipped_document;
pub(crate) mod unimplemented_field;
pub(crate) mod unknown_extension;
pub(crate) mod unknown_field;
pub(crate) mod unvalidated_payload;
