//! Writes a tenant-scale Envoy configuration to stdout (or `--out FILE`).
//! `cargo run -p xdsck-benches --release --bin xdsck-gen -- --tenants 10000 --format config-dump`

use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use xdsck_benches::{Format, Layout, Routes, Shape, Spec, write};

#[derive(Debug, Parser)]
#[command(about = "Generate tenant-scale Envoy configuration for xdsck's benchmarks")]
struct Args {
    #[arg(long, default_value_t = 1000)]
    tenants: usize,
    #[arg(long, value_enum, default_value_t = FormatArg::ConfigDump)]
    format: FormatArg,
    #[arg(long, value_enum, default_value_t = LayoutArg::Shared)]
    layout: LayoutArg,
    #[arg(long, value_enum, default_value_t = ShapeArg::Tenants)]
    shape: ShapeArg,
    /// Extra TLS-terminating hostname chains per tenant.
    #[arg(long, default_value_t = 0)]
    hostnames: usize,
    /// Duplicate the `api` chain of every Nth tenant (Envoy rejects the listener).
    #[arg(long, value_name = "N")]
    duplicate_every: Option<usize>,
    /// Make the `api` chain of every Nth tenant demand ALPN h2 (a black hole).
    #[arg(long, value_name = "N")]
    blackhole_every: Option<usize>,
    /// JSON on one line (what `json.dump`, `json.Marshal` and `jq -c` write) instead of indented.
    #[arg(long)]
    minified: bool,
    /// Where the TLS-terminating chains' HCMs find their routes: `external` (RDS names the
    /// input does not hold), `inline` (a `route_config` per chain and the clusters its routes
    /// name), `rds` (config_dump only: the tables in `dynamic_route_configs`).
    #[arg(long, value_enum, default_value_t = RoutesArg::External)]
    routes: RoutesArg,
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    ConfigDump,
    BootstrapJson,
    BootstrapYaml,
    Cec,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LayoutArg {
    Shared,
    PerTenant,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoutesArg {
    External,
    Inline,
    Rds,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ShapeArg {
    Tenants,
    WildcardFanout,
    SameSni,
    ManyNames,
    SameDomain,
    CoveredRoutes,
    WildcardNames,
    SharedTable,
    SharedAddress,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let spec = Spec {
        tenants: a.tenants,
        format: match a.format {
            FormatArg::ConfigDump => Format::ConfigDump,
            FormatArg::BootstrapJson => Format::BootstrapJson,
            FormatArg::BootstrapYaml => Format::BootstrapYaml,
            FormatArg::Cec => Format::Cec,
        },
        layout: match a.layout {
            LayoutArg::Shared => Layout::Shared,
            LayoutArg::PerTenant => Layout::PerTenant,
        },
        shape: match a.shape {
            ShapeArg::Tenants => Shape::Tenants,
            ShapeArg::WildcardFanout => Shape::WildcardFanout,
            ShapeArg::SameSni => Shape::SameSni,
            ShapeArg::ManyNames => Shape::ManyNames,
            ShapeArg::SameDomain => Shape::SameDomain,
            ShapeArg::CoveredRoutes => Shape::CoveredRoutes,
            ShapeArg::WildcardNames => Shape::WildcardNames,
            ShapeArg::SharedTable => Shape::SharedTable,
            ShapeArg::SharedAddress => Shape::SharedAddress,
        },
        hostnames: a.hostnames,
        duplicate_every: a.duplicate_every,
        blackhole_every: a.blackhole_every,
        minified: a.minified,
        routes: match a.routes {
            RoutesArg::External => Routes::External,
            RoutesArg::Inline => Routes::Inline,
            RoutesArg::Rds => Routes::Rds,
        },
    };
    match &a.out {
        Some(path) => {
            let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
            let mut w = BufWriter::new(f);
            write(&spec, &mut w)?;
            w.flush()?;
        }
        None => {
            let mut w = BufWriter::new(std::io::stdout().lock());
            write(&spec, &mut w)?;
            w.flush()?;
        }
    }
    Ok(())
}
