//! The committed `core/schema/` is what the real Envoy 1.40 gives, byte for byte, and it is a
//! schema a reader can use. Never skipped: without an Envoy the first test fails and says why.

use prost_reflect::{DescriptorPool, Value};

#[test]
fn committed_schema_is_what_envoy_gives() {
    let envoy = xdsck_schema_gen::find_envoy().unwrap_or_else(|e| {
        panic!("{e}\nThis test needs Envoy 1.40: set XDSCK_ENVOY or let scripts/install-envoy.sh install it")
    });
    let generated = xdsck_schema_gen::generate(&envoy).unwrap_or_else(|e| panic!("reading the schema of Envoy: {e}"));
    let out = xdsck_schema_gen::default_out_dir();
    for (name, contents) in generated.files() {
        let path = out.join(name);
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == contents,
            "core/schema/{name} ({} bytes) differs from what {} gives ({} bytes); \
             regenerate with `cargo run -p xdsck-schema-gen` and commit it",
            committed.len(),
            envoy.display(),
            contents.len()
        );
    }
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
