//! `xdsck rules` and `xdsck explain`: the rule registry, for people and for scripts.

use anyhow::{Result, bail};
use xdsck_core::Rule;

/// One line per rule, columns aligned.
pub fn table() -> String {
    let rules: Vec<&Rule> = xdsck_core::rules().collect();
    let name_width = rules.iter().map(|r| r.name.len()).chain(["NAME".len()]).max().unwrap_or(0);
    let mut out = format!("{:<7} {:<name_width$} {:<8} SUMMARY\n", "CODE", "NAME", "SEVERITY");
    for r in rules {
        out.push_str(&format!("{:<7} {:<name_width$} {:<8} {}\n", r.code, r.name, r.severity.as_str(), r.summary));
    }
    out
}

/// `{"version": 1, "rules": [{code, name, severity, group, summary, input_problem, explanation}]}`.
pub fn json() -> String {
    xdsck_core::report::rules_json()
}

/// The explanation of one rule, under a heading naming it. A rule's old name explains the
/// rules that now carry its meaning, after a line saying so.
pub fn explain(code_or_name: &str) -> Result<String> {
    if let Some(alias) = xdsck_core::codes::aliases::find(code_or_name) {
        let now: Vec<String> = alias.rules.iter().map(|r| format!("{} {}", r.code, r.name)).collect();
        let mut out =
            format!("`{}` is an old name: {}. It now selects {}.\n", alias.name, alias.why, now.join(" and "));
        for rule in alias.rules {
            out.push('\n');
            out.push_str(&explain_rule(rule));
        }
        return Ok(out);
    }
    let Some(rule) = xdsck_core::rule(code_or_name) else {
        let close = close_matches(code_or_name);
        if close.is_empty() {
            bail!("unknown rule `{code_or_name}`; `xdsck rules` lists them all");
        }
        bail!("unknown rule `{code_or_name}`; did you mean: {}?", close.join(", "));
    };
    Ok(explain_rule(rule))
}

fn explain_rule(rule: &Rule) -> String {
    format!(
        "# {} {}\n\nDefault severity: {}. {}\n\n{}",
        rule.code,
        rule.name,
        rule.severity,
        rule.summary,
        rule.explanation().trim_end(),
    ) + "\n"
}

/// Rules whose code or name is a small edit away, best first.
pub(crate) fn close_matches(query: &str) -> Vec<String> {
    let query = query.to_ascii_lowercase();
    let mut scored: Vec<(f64, &Rule)> = xdsck_core::rules()
        .map(|r| {
            let by_code = strsim::normalized_levenshtein(&query, &r.code.to_ascii_lowercase());
            let by_name = strsim::jaro_winkler(&query, r.name);
            (by_code.max(by_name), r)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.code.cmp(b.1.code)));
    scored.into_iter().take(3).map(|(_, r)| format!("{} ({})", r.code, r.name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explains_by_code_or_name_in_any_case() {
        assert!(explain("xds001").unwrap().starts_with("# XDS001 unreadable-input\n"));
        assert!(explain("invalid-utf8").unwrap().contains("## What it finds"));
    }

    #[test]
    fn an_old_name_explains_the_rules_that_carry_it() {
        let text = explain("malformed-cidr").unwrap();
        assert!(text.starts_with("`malformed-cidr` is an old name: "), "{text}");
        assert!(text.contains("\n# XDS104 invalid-cidr\n") && text.contains("\n# XDS206 misleading-cidr\n"), "{text}");
    }

    #[test]
    fn suggests_close_codes() {
        let err = explain("XDS00l").unwrap_err().to_string();
        assert!(err.contains("did you mean"), "{err}");
        assert!(err.contains("XDS001"), "{err}");
    }
}
