//! `xdsck gateway`: Gateway API YAML in; what a Cilium version sets on each Gateway and
//! listener, the CiliumEnvoyConfig it renders, and the findings of every check on it.

use std::fmt::Write as _;

use anyhow::Result;
use xdsck_core::Sources;
use xdsck_core::gateway::cilium::{Condition, Version};
use xdsck_core::gateway::{self, Evaluation};

use crate::args::{Format, GatewayArgs};

pub fn run(args: &GatewayArgs) -> Result<u8> {
    crate::check_report_args(&args.report)?;
    let version: Version = args.cilium.parse()?;
    let outcome = &args.report.outcome;
    let reporting = crate::config::Reporting::from_args(&args.report)?;
    let (mut sources, failed) = crate::input::read_sources(&args.paths, outcome.max_bytes);
    let limits = xdsck_core::load::Limits { max_bytes: outcome.max_bytes, ..Default::default() };
    let mut eval = gateway::evaluate_except(&mut sources, version, &limits, failed, &reporting.settings);
    reporting.finish(&mut eval.report)?;
    if args.render {
        crate::print(&gateway::json::rendered_list(&eval))?;
        return Ok(if eval.report.failed_inputs > 0 { crate::FAILED } else { crate::CLEAN });
    }
    let report = &args.report;
    match report.format {
        // The gateway's JSON holds the findings.
        Format::Json if !report.statistics => {
            let json = format!("{}\n", serde_json::to_string_pretty(&gateway::json::to_json(&eval, &sources))?);
            crate::write_report_after(report, &json, &eval.report, false, &sources)
        }
        Format::Text if !report.statistics && !report.quiet => {
            crate::write_report_after(report, &text(&eval, &sources), &eval.report, true, &sources)
        }
        _ => crate::write_report(report, &eval.report, &sources),
    }
}

fn place(sources: &Sources, loc: &xdsck_core::Location) -> String {
    let file = sources.get(loc.source);
    match loc.offset {
        Some(o) => {
            let lc = file.line_column(o);
            format!("{}:{}:{}", file.name(), lc.line, lc.column)
        }
        None => file.name().to_owned(),
    }
}

fn condition_line(out: &mut String, indent: &str, c: &Condition) {
    let status = if c.status { "True" } else { "False" };
    let _ = writeln!(out, "{indent}{}={status} {}: {}", c.kind, c.reason, c.message);
}

fn text(eval: &Evaluation, sources: &Sources) -> String {
    let mut out = String::new();
    if eval.gateways.is_empty() {
        let _ = writeln!(out, "no Gateway in the input (Cilium {})", eval.version);
    }
    for g in &eval.gateways {
        let _ = writeln!(
            out,
            "Gateway {}/{} on Cilium {} ({})",
            g.namespace,
            g.name,
            eval.version,
            place(sources, &g.location)
        );
        for c in &g.conditions {
            condition_line(&mut out, "  ", c);
        }
        for l in &g.listeners {
            let tls = l.tls_mode.as_deref().map(|m| format!(" {m}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  listener {} ({} {}{tls} port {}) at {}",
                l.status.name,
                l.protocol,
                l.hostname,
                l.port,
                place(sources, &l.location)
            );
            for c in &l.status.conditions {
                condition_line(&mut out, "    ", c);
            }
            let envoy = if l.translated {
                "rendered into the CiliumEnvoyConfig"
            } else {
                "not rendered: no Envoy filter chain"
            };
            let _ = writeln!(out, "    Envoy: {envoy}");
        }
        match &g.rendered {
            Some((cec, _)) => {
                let names: Vec<&str> = cec["spec"]["resources"]
                    .as_array()
                    .map(|r| {
                        r.iter()
                            .filter(|x| x.get("filterChains").is_some())
                            .filter_map(|x| x["name"].as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  renders CiliumEnvoyConfig {}/cilium-gateway-{} with Envoy listener(s) {}",
                    g.namespace,
                    g.name,
                    names.join(", ")
                );
            }
            None => {
                let _ = writeln!(out, "  renders no CiliumEnvoyConfig");
            }
        }
        out.push('\n');
    }
    if eval.not_modelled > 0 {
        let _ = writeln!(out, "{} object(s) of the input not modelled (XDS401 below)\n", eval.not_modelled);
    }
    out
}
