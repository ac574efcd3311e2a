//! Where the time goes, stage by stage and check by check, for one input:
//! `cargo run -p xdsck-benches --release --bin xdsck-stages -- FILE`. On Linux each line also
//! gives the resident memory after the stage and the peak so far (`/proc/self/status`).
//! `--load-only` stops after loading: a process that only reads, for a profiler.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use anyhow::{Context, Result};
use xdsck_core::chain_match::MatchGraph;
use xdsck_core::report::{Format, RenderOptions, render};
use xdsck_core::{Options, SourceFile, SourceId, Sources, analyze, checks, load};

// The CLI's allocator, so that each stage costs here what it costs in `xdsck check`.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// `  rss N MB, peak N MB` from `/proc/self/status`, or nothing where there is none.
fn memory() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return String::new();
    };
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()
    };
    match (field("VmRSS:"), field("VmHWM:")) {
        (Some(rss), Some(peak)) => format!("  rss {} MB, peak {} MB", rss / 1024, peak / 1024),
        _ => String::new(),
    }
}

fn main() -> Result<()> {
    let path = std::env::args().nth(1).context("usage: xdsck-stages FILE [--load-only]")?;
    let load_only = std::env::args().nth(2).is_some_and(|a| a == "--load-only");
    // On one core: the CLI reads a large file on every core (cli/src/input.rs), in about half
    // this time on two.
    let t = Instant::now();
    let text = std::fs::read_to_string(&path)?;
    println!("read         {:>8.3}s  {} bytes{}", t.elapsed().as_secs_f64(), text.len(), memory());
    let mut sources = Sources::new();
    sources.add(SourceFile::new(path, text));
    let t = Instant::now();
    let document = load::Document::new(SourceId(0), sources.get(SourceId(0)));
    let input = document.load().map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("load         {:>8.3}s  {} listeners{}", t.elapsed().as_secs_f64(), input.listeners.len(), memory());
    if load_only {
        return Ok(());
    }
    let t = Instant::now();
    let chains: usize = input.listeners.iter().map(|l| MatchGraph::build(l).node_count()).sum();
    println!("graph build  {:>8.3}s  {chains} nodes{}", t.elapsed().as_secs_f64(), memory());
    // The route tables are read with the listeners (`load`): here they are only counted.
    let routes: usize = input.route_tables.len();
    let snapshot = xdsck_core::model::Snapshot { inputs: vec![input], one_envoy: false };
    let index = xdsck_core::model::route::RouteTables::of(&snapshot);
    let vhs: usize = index.tables.iter().map(|t| t.virtual_hosts.len()).sum();
    println!("routes read             {} tables ({routes} RDS), {vhs} virtual hosts", index.tables.len());
    drop(index);
    let t = Instant::now();
    let findings = checks::run_all(&snapshot, &sources).findings;
    println!(
        "all checks   {:>8.3}s  {} findings (graphs included){}",
        t.elapsed().as_secs_f64(),
        findings.len(),
        memory()
    );
    for check in xdsck_core::codes::checks() {
        let t = Instant::now();
        let n = checks::run_one(check, &snapshot, &sources).len();
        println!("  {:<32} {:>8.3}s  {n}", check.rule().name, t.elapsed().as_secs_f64());
    }
    drop(snapshot);
    let t = Instant::now();
    let report = analyze(&sources, &Options::default());
    println!("analyze      {:>8.3}s{}", t.elapsed().as_secs_f64(), memory());
    let t = Instant::now();
    let out = render(Format::Json, &report, &sources, RenderOptions::default());
    println!("render json  {:>8.3}s  {} bytes{}", t.elapsed().as_secs_f64(), out.len(), memory());
    let t = Instant::now();
    let out = render(Format::Text, &report, &sources, RenderOptions::default());
    println!("render text  {:>8.3}s  {} bytes{}", t.elapsed().as_secs_f64(), out.len(), memory());
    Ok(())
}
