//! The committed `core/schema/` is what the real Envoy 1.40 and envoy-types' .proto files give,
//! byte for byte, and it is a schema a reader can use. Never skipped: without an Envoy, or without
//! envoy-types' sources, the first test fails and says why.

use std::collections::BTreeMap;

use prost_reflect::{DescriptorPool, Value};

#[test]
fn committed_schema_is_what_envoy_gives() {
    let envoy = xdsck_schema_gen::find_envoy().unwrap_or_else(|e| {
        panic!("{e}\nThis test needs Envoy 1.40: set XDSCK_ENVOY or let scripts/install-envoy.sh install it")
    });
    let envoy_types = xdsck_schema_gen::categories::find_envoy_types(&xdsck_schema_gen::workspace_root())
        .unwrap_or_else(|e| panic!("{e}\nThis test reads envoy-types' .proto files: `cargo fetch` brings them"));
    let generated = xdsck_schema_gen::generate(&envoy, &envoy_types)
        .unwrap_or_else(|e| panic!("reading the schema of Envoy and envoy-types: {e}"));
    let out = xdsck_schema_gen::default_out_dir();
    for (name, contents) in generated.files() {
        let path = out.join(name);
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == contents,
            "core/schema/{name} ({} bytes) differs from what {} and envoy-types {} give ({} bytes); \
             regenerate with `cargo run -p xdsck-schema-gen` and commit it",
            committed.len(),
            envoy.display(),
            envoy_types.version,
            contents.len()
        );
    }
}

#[test]
fn committed_compiled_schema_is_what_the_committed_descriptors_give() {
    let out = xdsck_schema_gen::default_out_dir();
    let (path, compiled) = xdsck_schema_gen::recompile(&out).unwrap_or_else(|e| panic!("compiling core/schema/: {e}"));
    let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        committed == compiled,
        "core/schema/schema.postcard ({} bytes) is not what the descriptors and tables beside it compile to \
         ({} bytes); rewrite it with `cargo run -p xdsck-schema-gen -- --compile` and commit it",
        committed.len(),
        compiled.len()
    );
}

#[test]
fn committed_descriptors_decode_with_their_options() {
    let path = xdsck_schema_gen::default_out_dir().join("envoy.binpb");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let pool =
        DescriptorPool::decode(bytes.as_slice()).expect("envoy.binpb is a FileDescriptorSet prost-reflect takes");

    let message = |name: &str| pool.get_message_by_name(name).unwrap_or_else(|| panic!("no message {name}"));
    message("envoy.config.bootstrap.v3.Bootstrap");
    assert!(message("envoy.config.listener.v3.Listener").get_field_by_name("bypass_overload_manager").is_some());
    // These two are missing from the older API in envoy-types' .proto files.
    let hcm = message("envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager");
    assert!(hcm.get_field_by_name("record_route_resolution_stats").is_some());
    assert!(message("envoy.config.core.v3.HealthCheck").get_field_by_name("name").is_some());

    // The PGV rules survived: they are extension 1071 of FieldOptions, which re-encoding
    // through prost-types would have dropped.
    let rules = pool.get_extension_by_name("validate.rules").expect("extension validate.rules");
    assert_eq!(rules.number(), 1071);
    let port = message("envoy.config.core.v3.SocketAddress").get_field_by_name("port_value").expect("port_value");
    let options = port.options();
    assert!(options.has_extension(&rules), "port_value has no validate.rules option");
    let field_rules = options.get_extension(&rules);
    let Value::Message(field_rules) = field_rules.as_ref() else { panic!("validate.rules is not a message") };
    let uint32 = field_rules.get_field_by_name("uint32").expect("port_value's rules are uint32 rules");
    let Value::Message(uint32) = uint32.as_ref() else { panic!("uint32 rules are not a message") };
    assert_eq!(uint32.get_field_by_name("lte").as_deref(), Some(&Value::U32(65535)));
}

#[test]
fn committed_categories_name_the_slots_envoy_looks_extensions_up_in() {
    let out = xdsck_schema_gen::default_out_dir();
    let path = out.join("categories.tsv");
    let tsv = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = tsv.lines();
    assert!(lines.next().is_some_and(|h| h.starts_with("# Extension categories of the API's slots")), "no header");
    let slots: BTreeMap<(&str, &str), &str> = lines
        .map(|line| match line.split('\t').collect::<Vec<_>>().as_slice() {
            [message, field, categories] => ((*message, *field), *categories),
            _ => panic!("not message<TAB>field<TAB>categories: {line:?}"),
        })
        .collect();
    let category = |message, field| slots.get(&(message, field)).copied();

    let known = [
        ("envoy.config.listener.v3.Filter", "typed_config", "envoy.filters.network"),
        (
            "envoy.config.listener.v3.ListenerFilter",
            "typed_config",
            "envoy.filters.listener,envoy.filters.udp_listener",
        ),
        (
            "envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter",
            "typed_config",
            "envoy.filters.http",
        ),
        ("envoy.config.listener.v3.FilterChain", "transport_socket", "envoy.transport_sockets.downstream"),
        // The upstream side is annotated on the transport socket a match picks, not on
        // Cluster.transport_socket (which envoy-types leaves unannotated, below).
        (
            "envoy.config.cluster.v3.Cluster.TransportSocketMatch",
            "transport_socket",
            "envoy.transport_sockets.upstream",
        ),
        // Annotated on its oneof `config_type`, which holds only `typed_config`.
        ("envoy.config.accesslog.v3.AccessLog", "typed_config", "envoy.access_loggers"),
        // Upstream HTTP filters are HttpFilters too, in another category.
        ("envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "http_filters", "envoy.filters.http.upstream"),
        // From the xds API (xds/), not data-plane-api.
        ("xds.type.matcher.v3.Matcher.MatcherList.Predicate.SinglePredicate", "input", "envoy.matching.common_inputs"),
    ];
    let path = out.join("envoy.binpb");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let pool = DescriptorPool::decode(bytes.as_slice()).expect("envoy.binpb decodes");
    for (message, field, categories) in known {
        assert_eq!(category(message, field), Some(categories), "{message}.{field}");
        // The slot is one Envoy 1.40 has, and it takes a message (an Any or a message holding one).
        let descriptor = pool.get_message_by_name(message).unwrap_or_else(|| panic!("Envoy 1.40 has no {message}"));
        let field =
            descriptor.get_field_by_name(field).unwrap_or_else(|| panic!("Envoy 1.40 has no {message}.{field}"));
        assert!(field.kind().as_message().is_some(), "{message}.{} is not a message field", field.name());
    }
    assert_eq!(category("envoy.config.cluster.v3.Cluster", "transport_socket"), None);
    // `[#comment: add [#extension-category: envoy.retry_options_predicates] when ...]` is a comment.
    assert_eq!(category("envoy.config.route.v3.RetryPolicy", "retry_options_predicates"), None);
    assert!(slots.len() > 90, "only {} slots", slots.len());
}
