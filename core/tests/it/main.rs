//! xdsck-core's integration tests, one binary (the fixture specs, `checks`, have their own
//! harness). Run one module with `cargo test -p xdsck-core --test it <module>::`.

mod hostile;
mod layers;
mod loaders;
mod properties;
mod registry;
