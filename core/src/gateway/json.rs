//! The JSON answer of `xdsck gateway --format json` (and of the web page): the conditions of
//! every Gateway and listener, the rendered CiliumEnvoyConfigs, and the report of every check,
//! whose `findings`, `inputs` and `summary` are those of `xdsck --format json`.

use serde_json::{Value, json};

use super::Evaluation;
use super::cilium::Condition;
use crate::report::{self, Format, RenderOptions};
use crate::source::Sources;

fn condition(c: &Condition) -> Value {
    json!({"type": c.kind, "status": if c.status { "True" } else { "False" }, "reason": c.reason, "message": c.message})
}

/// The rendered CiliumEnvoyConfigs, in Gateway order.
pub fn rendered(eval: &Evaluation) -> Vec<&Value> {
    eval.gateways.iter().filter_map(|g| g.rendered.as_ref().map(|r| &r.0)).collect()
}

/// Every rendered CiliumEnvoyConfig in one `v1` `List` (JSON, which is YAML too): what
/// `--render` prints, ready for `xdsck -` and `kubectl apply -f -`.
pub fn rendered_list(eval: &Evaluation) -> String {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": rendered(eval)});
    format!("{}\n", serde_json::to_string_pretty(&list).unwrap_or_default())
}

/// The whole `xdsck gateway --format json` answer: `cilium`, `gateways` (conditions of each
/// Gateway and listener, and whether the listener is `translated`), `rendered`, `not_modelled`,
/// and the report's `findings`, `inputs` and `summary`. The CLI and the web page print this one
/// value, so they cannot drift apart.
pub fn to_json(eval: &Evaluation, sources: &Sources) -> Value {
    let gateways: Vec<Value> = eval
        .gateways
        .iter()
        .map(|g| {
            json!({
                "namespace": g.namespace,
                "name": g.name,
                "conditions": g.conditions.iter().map(condition).collect::<Vec<_>>(),
                "listeners": g.listeners.iter().map(|l| json!({
                    "name": l.status.name,
                    "conditions": l.status.conditions.iter().map(condition).collect::<Vec<_>>(),
                    "translated": l.translated,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let report: Value =
        serde_json::from_str(&report::render(Format::Json, &eval.report, sources, RenderOptions::default()))
            .unwrap_or(Value::Null);
    json!({
        "cilium": eval.version.as_str(),
        "gateways": gateways,
        "rendered": rendered(eval),
        "not_modelled": eval.not_modelled,
        "findings": report.get("findings").cloned().unwrap_or(Value::Null),
        "inputs": report.get("inputs").cloned().unwrap_or(Value::Null),
        "summary": report.get("summary").cloned().unwrap_or(Value::Null),
    })
}
