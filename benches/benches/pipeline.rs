//! Criterion benches per stage at tenant scale: load and end to end per input shape (minified
//! and pretty JSON, YAML, a CEC stream), graph build, checks, trace lookups, and the route pass
//! and end to end with an inline route table per TLS chain. 1k and 10k tenants
//! by default; 100k (400k chains, ~215-290 MB of JSON) with `XDSCK_BENCH_100K=1` (minutes, and
//! several GB of memory for the YAML shapes).

use std::hint::black_box;
use std::net::SocketAddr;
use std::time::Duration;

use criterion::{BatchSize, Bencher, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use xdsck_benches::{Format, Routes, Spec, write};
use xdsck_core::chain_match::MatchGraph;
use xdsck_core::chain_match::trace::Connection;
use xdsck_core::report::{Format as Out, RenderOptions, render};
use xdsck_core::{Options, SourceFile, SourceId, Sources, analyze, checks, load};

/// Every input shape: `(name, format, minified)`. Minified JSON is one line, the shape that
/// once made line lookups quadratic; the others are what Envoy and Cilium write.
const SHAPES: &[(&str, Format, bool)] = &[
    ("config_dump_minified", Format::ConfigDump, true),
    ("config_dump_pretty", Format::ConfigDump, false),
    ("bootstrap_json_minified", Format::BootstrapJson, true),
    ("bootstrap_json_pretty", Format::BootstrapJson, false),
    ("bootstrap_yaml", Format::BootstrapYaml, false),
    ("cec_yaml_stream", Format::Cec, false),
];

fn text(tenants: usize, format: Format, minified: bool) -> String {
    text_with(&Spec { minified, ..Spec::tenants(tenants, format) })
}

fn text_with(spec: &Spec) -> String {
    let mut buf = Vec::new();
    write(spec, &mut buf).expect("generates into memory");
    String::from_utf8(buf).expect("UTF-8")
}

fn sizes() -> Vec<usize> {
    let mut v = vec![1_000, 10_000];
    if std::env::var_os("XDSCK_BENCH_100K").is_some() {
        v.push(100_000);
    }
    v
}

fn load_stage(c: &mut Criterion) {
    let mut g = c.benchmark_group("load");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for tenants in sizes() {
        for &(name, format, minified) in SHAPES {
            let t = text(tenants, format, minified);
            g.throughput(Throughput::Bytes(t.len() as u64));
            g.bench_with_input(BenchmarkId::new(name, tenants), &t, |b, t| {
                // A fresh source per run, as a run of xdsck reads one.
                b.iter_batched(
                    || SourceFile::new("bench", t.clone()),
                    |file| {
                        let document = load::Document::new(SourceId(0), &file);
                        let input = document.load().expect("generated input loads");
                        black_box(input.listeners.len());
                    },
                    BatchSize::PerIteration,
                );
            });
        }
    }
    g.finish();
}

fn graph_checks_trace(c: &mut Criterion) {
    let mut g = c.benchmark_group("analysis");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for tenants in sizes() {
        let mut sources = Sources::new();
        sources.add(SourceFile::new("bench", text(tenants, Format::ConfigDump, false)));
        let document = load::Document::new(SourceId(0), sources.get(SourceId(0)));
        let input = document.load().expect("generated input loads");
        let listener = &input.listeners[0];
        g.throughput(Throughput::Elements(listener.filter_chains.len() as u64));
        g.bench_function(BenchmarkId::new("graph_build", tenants), |b| {
            b.iter(|| black_box(MatchGraph::build(listener).node_count()));
        });
        let snapshot = xdsck_core::model::Snapshot { inputs: vec![input], one_envoy: false };
        g.bench_function(BenchmarkId::new("checks", tenants), |b| {
            b.iter(|| black_box(checks::run_all(&snapshot, &sources).findings.len()));
        });
        let graph = MatchGraph::build(&snapshot.inputs[0].listeners[0]);
        let dst: SocketAddr = "127.1.0.0:443".parse().expect("an address");
        let conns: Vec<Connection> = (0..1000)
            .map(|i| Connection {
                destination: Some(dst),
                source: Some("198.51.100.7:40000".parse().expect("an address")),
                direct_source: None,
                transport_protocol: "tls".into(),
                server_name: format!("api.tenant-{}.example.com", (i * 7919) % tenants),
                application_protocols: vec!["h2".into(), "http/1.1".into()],
            })
            .collect();
        g.throughput(Throughput::Elements(conns.len() as u64));
        g.bench_function(BenchmarkId::new("trace_1000_lookups", tenants), |b| {
            b.iter(|| {
                for c in &conns {
                    black_box(graph.reach(c, None));
                }
            });
        });
    }
    g.finish();
}

/// One whole run on `text`: load, analyze and the JSON report of every finding (the input's copy
/// made outside the timing).
fn json_report(b: &mut Bencher<'_>, text: &str) {
    b.iter_batched(
        || {
            let mut s = Sources::new();
            s.add(SourceFile::new("bench", text.to_owned()));
            s
        },
        |sources| {
            let report = analyze(&sources, &Options::default());
            black_box(render(Out::Json, &report, &sources, RenderOptions::default()).len());
        },
        BatchSize::PerIteration,
    );
}

/// Load, analyze and the JSON report of every finding, per shape: the shapes must cost alike.
fn end_to_end(c: &mut Criterion) {
    for &(name, format, minified) in SHAPES {
        let mut g = c.benchmark_group(format!("end_to_end/{name}"));
        g.sample_size(10).measurement_time(Duration::from_secs(5));
        for tenants in sizes() {
            let t = text(tenants, format, minified);
            g.throughput(Throughput::Bytes(t.len() as u64));
            g.bench_with_input(BenchmarkId::new("json_report", tenants), t.as_str(), json_report);
        }
        g.finish();
    }
}

/// Route tables at tenant scale (an inline table per TLS chain, bootstrap JSON): loading (the
/// tables are read with the listeners, in the one pass) and end to end, minified and pretty.
fn route_tables(c: &mut Criterion) {
    let mut g = c.benchmark_group("routes");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for tenants in sizes() {
        for (shape, minified) in [("minified", true), ("pretty", false)] {
            let spec = Spec { minified, routes: Routes::Inline, ..Spec::tenants(tenants, Format::BootstrapJson) };
            let t = text_with(&spec);
            g.throughput(Throughput::Bytes(t.len() as u64));
            let file = SourceFile::new("bench", t.clone());
            let document = load::Document::new(SourceId(0), &file);
            g.bench_function(BenchmarkId::new(format!("load_{shape}"), tenants), |b| {
                b.iter(|| black_box(document.load().expect("generated input loads").listeners.len()));
            });
            g.bench_with_input(BenchmarkId::new(format!("json_report_{shape}"), tenants), t.as_str(), json_report);
        }
    }
    g.finish();
}

criterion_group!(benches, load_stage, graph_checks_trace, end_to_end, route_tables);
criterion_main!(benches);
