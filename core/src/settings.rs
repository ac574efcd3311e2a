//! Which findings a run reports, and at which severity: rule selection in ruff's shape
//! (`select`, `extend-select`, `ignore` by code, code prefix or name), severity overrides, and
//! ignores scoped to listeners and paths — as data. The CLI (flags, `xdsck.toml`) and the web
//! page only translate what they are given into [`Settings`]; applying them happens here, so
//! both suppress alike, and every finding left out is counted in the report
//! ([`crate::report::Suppressed`]), never dropped silently. A check whose rule is not selected
//! is not run at all ([`crate::checks::run_selected`]): its findings are not looked for.
//!
//! Input problems (`XDS0xx`) are outside selection: they say that an input was not read, and a
//! run that did not read its input must say so whatever it was asked to leave out.

use std::collections::BTreeMap;

use glob::MatchOptions;
#[cfg(feature = "config")]
use serde::Deserialize;

use crate::codes::aliases::Alias;
use crate::codes::is_input_problem;
use crate::diagnostic::{Diagnostic, Rule, Severity, declare_rule};
use crate::model::Snapshot;
use crate::report::Report;
use crate::source::{Location, SourceId, Sources};

/// The Kubernetes annotation that silences rules on a CiliumEnvoyConfig's listeners.
pub const IGNORE_ANNOTATION: &str = "xdsck.io/ignore";

declare_rule! {
    /// An `xdsck.io/ignore` annotation xdsck cannot read entirely. A warning, not an error: the
    /// configuration is fine, but a suppression its author meant is not applied.
    pub static INVALID_SUPPRESSION = {
        code: "XDS020",
        name: "invalid-suppression",
        severity: Severity::Warning,
        summary: "An xdsck.io/ignore annotation names something that is not a rule.",
        explanation: "settings/invalid_suppression.md",
    }
}

/// Settings that could not be read: a selector that names no rule, a malformed glob or
/// severity, a config file that is not the TOML xdsck reads.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// A selector that names no rule; the text as given.
    #[error("`{0}` is not a rule code, code prefix (`XDS3`), rule name or `ALL` (see `xdsck rules`)")]
    UnknownRule(String),
    /// A selector that names only input problems, which cannot be selected away; as given.
    #[error("`{0}` selects input problems (XDS0xx), which are always reported: they mean an input was not read")]
    InputProblem(String),
    /// A severity override that is not `RULE=LEVEL`; as given.
    #[error("`{0}`: give a severity override as RULE=LEVEL, LEVEL one of error, warning, info")]
    BadSeverity(String),
    /// A listener or path glob that does not parse.
    #[error("`{pattern}` is not a glob: {reason}")]
    BadGlob {
        /// The glob as given.
        pattern: String,
        /// What the glob crate found wrong with it.
        reason: String,
    },
    /// `xdsck.toml` is not TOML, or not in the shape xdsck reads; located in the file.
    #[error("line {line}, column {column}: {message}")]
    Config {
        /// 1-based line of the config file.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong there.
        message: String,
    },
}

/// A rule selector: `ALL`, a code (`XDS301`), a code prefix (`XDS3`), a name
/// (`wildcard-overlap`) or a rule's old name (`malformed-cidr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// Every rule.
    All,
    /// Upper case; matches at least one rule's code.
    Prefix(String),
    /// One rule, by code or name.
    Rule(&'static Rule),
    /// An old rule name: the rules that now carry its meaning ([`crate::codes::aliases`]).
    Alias(&'static Alias),
}

impl Selector {
    /// Reads a selector, in any case.
    pub fn parse(text: &str) -> Result<Self, SettingsError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("ALL") {
            return Ok(Self::All);
        }
        if let Some(rule) = crate::rule(text) {
            return Ok(Self::Rule(rule));
        }
        if let Some(alias) = crate::codes::aliases::find(text) {
            return Ok(Self::Alias(alias));
        }
        let upper = text.to_ascii_uppercase();
        if upper.starts_with("XDS") && crate::rules().any(|r| r.code.starts_with(&upper)) {
            return Ok(Self::Prefix(upper));
        }
        Err(SettingsError::UnknownRule(text.to_owned()))
    }

    /// Like [`Self::parse`], refusing a selector that only names input problems.
    fn parse_check(text: &str) -> Result<Self, SettingsError> {
        let selector = Self::parse(text)?;
        if crate::rules().filter(|r| selector.matches(r)).all(is_input_problem) {
            return Err(SettingsError::InputProblem(text.trim().to_owned()));
        }
        Ok(selector)
    }

    /// Whether the selector covers `rule`.
    pub fn matches(&self, rule: &Rule) -> bool {
        match self {
            Self::All => true,
            Self::Prefix(p) => rule.code.starts_with(p.as_str()),
            Self::Rule(r) => r.code == rule.code,
            Self::Alias(a) => a.rules.iter().any(|r| r.code == rule.code),
        }
    }

    /// How much of a code the selector pins down: when selectors disagree about a rule, the
    /// most specific wins (`--select XDS2 --ignore XDS201` keeps XDS202), as in ruff.
    fn specificity(&self) -> usize {
        match self {
            Self::All => 0,
            Self::Prefix(p) => p.len(),
            // Between a code prefix and one rule: `--select malformed-cidr --ignore
            // misleading-cidr` keeps invalid-cidr.
            Self::Alias(_) => usize::MAX - 1,
            Self::Rule(_) => usize::MAX,
        }
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("ALL"),
            Self::Prefix(p) => f.write_str(p),
            Self::Rule(r) => f.write_str(r.code),
            Self::Alias(a) => f.write_str(a.name),
        }
    }
}

impl std::str::FromStr for Severity {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Ok(Self::Error),
            "warning" => Ok(Self::Warning),
            "info" => Ok(Self::Info),
            _ => Err(()),
        }
    }
}

/// Reads `RULE=LEVEL` (`XDS301=warning`, `XDS3=error`).
pub fn parse_severity_override(text: &str) -> Result<(Selector, Severity), SettingsError> {
    let bad = || SettingsError::BadSeverity(text.to_owned());
    let (rule, level) = text.split_once('=').ok_or_else(bad)?;
    let severity = level.parse().map_err(|()| bad())?;
    Ok((Selector::parse_check(rule)?, severity))
}

/// A glob with the text it was written as.
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    pattern: glob::Pattern,
    /// Whether `*` stops at `/` (paths) or not (listener names).
    literal_separator: bool,
}

impl Pattern {
    /// A listener-name glob: `*` matches any run of characters, `/` included
    /// (`gateway/*` covers `gateway/cilium-gateway/listener-443`).
    pub fn listener(text: &str) -> Result<Self, SettingsError> {
        Self::build(text, false)
    }

    /// A path glob, as in `.gitignore`: `*` stays within one directory, `**` crosses them.
    pub fn path(text: &str) -> Result<Self, SettingsError> {
        Self::build(text.strip_prefix("./").unwrap_or(text), true)
    }

    fn build(text: &str, literal_separator: bool) -> Result<Self, SettingsError> {
        let pattern = glob::Pattern::new(text)
            .map_err(|e| SettingsError::BadGlob { pattern: text.to_owned(), reason: e.msg.to_owned() })?;
        Ok(Self { text: text.to_owned(), pattern, literal_separator })
    }

    /// The glob as written, for messages.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `candidate` (a listener name, or a path relative to the config file) matches.
    pub fn is_match(&self, candidate: &str) -> bool {
        let options = MatchOptions {
            case_sensitive: true,
            require_literal_separator: self.literal_separator,
            require_literal_leading_dot: false,
        };
        self.pattern.matches_with(candidate, options)
    }
}

/// An ignore that applies to some listeners or some inputs only (`[[ignore]]` in `xdsck.toml`).
/// Every pattern given must match; a listener pattern never matches a finding that names no
/// listener.
#[derive(Debug, Clone)]
pub struct ScopedIgnore {
    /// The rules it ignores.
    pub rules: Vec<Selector>,
    /// Only on listeners whose name matches.
    pub listener: Option<Pattern>,
    /// Only in inputs whose path matches.
    pub path: Option<Pattern>,
}

impl ScopedIgnore {
    fn matches(&self, d: &Diagnostic, path: Option<&str>) -> bool {
        self.rules.iter().any(|s| s.matches(d.rule))
            && self.listener.as_ref().is_none_or(|p| d.listener.as_deref().is_some_and(|l| p.is_match(l)))
            && self.path.as_ref().is_none_or(|p| path.is_some_and(|path| p.is_match(path)))
    }
}

/// How path globs see an input's name: as a path relative to the directory the config file is
/// in. The CLI runs below that directory (the file is found upward), so a relative name gets
/// `prefix` (the working directory relative to the config's, e.g. `deploy/`) and an absolute one
/// loses `root` (the config's directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathBase {
    /// The config file's directory, absolute; `None` without a config file (absolute input paths
    /// then match nothing).
    pub root: Option<String>,
    /// The working directory relative to `root`, ending in `/` (empty when they are the same).
    pub prefix: String,
}

impl Settings {
    /// Whether a directory walk passes by this path (a file's or a directory's name as the walk
    /// found it).
    pub fn excludes(&self, name: &str) -> bool {
        let Some(path) = self.path_base.path_of(name) else { return false };
        let path = path.trim_end_matches('/');
        self.exclude.iter().any(|p| p.is_match(path) || p.is_match(&format!("{path}/")))
    }
}

impl PathBase {
    /// The path of an input as path globs match it; `None` for standard input.
    pub fn path_of(&self, name: &str) -> Option<String> {
        // `<stdin>` and the like name no file.
        if name == "-" || name.starts_with('<') {
            return None;
        }
        let name = name.replace('\\', "/");
        if name.starts_with('/') {
            let root = self.root.as_deref()?.trim_end_matches('/');
            return name.strip_prefix(root).and_then(|rest| rest.strip_prefix('/')).map(str::to_owned);
        }
        let mut rest = name.as_str();
        while let Some(r) = rest.strip_prefix("./") {
            rest = r;
        }
        Some(format!("{}{rest}", self.prefix))
    }
}

/// What a run reports. The default reports every rule at its own severity.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The rules to check; `None` means every rule.
    pub select: Option<Vec<Selector>>,
    /// Added to `select` (or to the config file's, for a CLI that overrides one).
    pub extend_select: Vec<Selector>,
    /// Taken out of the selection; where a select and an ignore both match, the more specific wins.
    pub ignore: Vec<Selector>,
    /// Severity overrides; the most specific selector wins, the later one among equals.
    pub severity: Vec<(Selector, Severity)>,
    /// Ignores limited to some listeners or paths.
    pub scoped: Vec<ScopedIgnore>,
    /// How path globs see input names.
    pub path_base: PathBase,
    /// Paths a directory given as input is walked past (`exclude` in `xdsck.toml`: path globs
    /// relative to the config file, `testdata/**`); files named on the command line are read
    /// whatever this says.
    pub exclude: Vec<Pattern>,
}

impl Settings {
    /// Settings from flags: each list as given (`--select`, `--extend-select`, `--ignore`, each
    /// `--severity RULE=LEVEL`).
    pub fn from_lists(
        select: Option<&[String]>,
        extend_select: &[String],
        ignore: &[String],
        severity: &[String],
    ) -> Result<Self, SettingsError> {
        let list = |v: &[String]| v.iter().map(|s| Selector::parse_check(s)).collect::<Result<Vec<_>, _>>();
        Ok(Self {
            select: select.map(list).transpose()?,
            extend_select: list(extend_select)?,
            ignore: list(ignore)?,
            severity: severity.iter().map(|s| parse_severity_override(s)).collect::<Result<_, _>>()?,
            scoped: Vec::new(),
            path_base: PathBase::default(),
            exclude: Vec::new(),
        })
    }

    /// `xdsck.toml` (feature `config`):
    ///
    /// ```toml
    /// exclude = ["testdata/**"]    # what a directory walk passes by
    ///
    /// [rules]
    /// select = ["ALL"]             # default: every rule
    /// extend-select = []
    /// ignore = ["XDS202"]
    /// severity = { XDS301 = "warning" }
    ///
    /// [[ignore]]
    /// rule = "XDS301"              # or a list: rule = ["XDS301", "XDS2"]
    /// listener = "gateway/*"       # a glob on the listener's name
    /// path = "deploy/**/*.yaml"    # a glob on the input's path, relative to this file
    /// reason = "tenants share the wildcard on purpose"
    /// ```
    #[cfg(feature = "config")]
    pub fn from_toml(text: &str) -> Result<Self, SettingsError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| line_column(text, span.start));
            SettingsError::Config { line, column, message: e.message().to_owned() }
        })?;
        let at = |span: std::ops::Range<usize>, e: SettingsError| {
            let (line, column) = line_column(text, span.start);
            SettingsError::Config { line, column, message: e.to_string() }
        };
        let selector = |s: &toml::Spanned<String>| Selector::parse_check(s.get_ref()).map_err(|e| at(s.span(), e));
        let list = |v: &[toml::Spanned<String>]| v.iter().map(selector).collect::<Result<Vec<_>, _>>();
        let rules = file.rules.unwrap_or_default();
        let mut settings = Settings {
            select: rules.select.as_deref().map(list).transpose()?,
            extend_select: list(&rules.extend_select)?,
            ignore: list(&rules.ignore)?,
            ..Settings::default()
        };
        for (rule, level) in &rules.severity {
            let selector = Selector::parse_check(rule).map_err(|e| at(level.span(), e))?;
            let severity = level
                .get_ref()
                .parse()
                .map_err(|()| at(level.span(), SettingsError::BadSeverity(format!("{rule}={}", level.get_ref()))))?;
            settings.severity.push((selector, severity));
        }
        for e in &file.exclude {
            settings.exclude.push(Pattern::path(e.get_ref()).map_err(|err| at(e.span(), err))?);
        }
        for ignore in &file.ignore {
            let span = ignore.span();
            let ignore = ignore.get_ref();
            let texts = match ignore.rule.get_ref() {
                OneOrMany::One(s) => std::slice::from_ref(s),
                OneOrMany::Many(v) => v.as_slice(),
            };
            let rules = texts
                .iter()
                .map(|s| Selector::parse_check(s).map_err(|e| at(ignore.rule.span(), e)))
                .collect::<Result<Vec<_>, _>>()?;
            let listener =
                ignore.listener.as_ref().map(|p| Pattern::listener(p.get_ref()).map_err(|e| at(p.span(), e)));
            let path = ignore.path.as_ref().map(|p| Pattern::path(p.get_ref()).map_err(|e| at(p.span(), e)));
            let scoped = ScopedIgnore { rules, listener: listener.transpose()?, path: path.transpose()? };
            if scoped.listener.is_none() && scoped.path.is_none() {
                return Err(SettingsError::Config {
                    line: line_column(text, span.start).0,
                    column: line_column(text, span.start).1,
                    message: "an [[ignore]] needs `listener` or `path` (to ignore a rule everywhere, list it in [rules] ignore)".to_owned(),
                });
            }
            settings.scoped.push(scoped);
        }
        Ok(settings)
    }

    /// These settings overridden by a CLI's: its `select` replaces our selection (select,
    /// extend-select, ignore), its other lists add to ours, its severities come after (so win
    /// among equals).
    pub fn extend(&mut self, other: Settings) {
        if let Some(select) = other.select {
            // As in ruff, a `select` replaces the whole selection before it: the file's
            // `extend-select` and `ignore` go too.
            self.select = Some(select);
            self.extend_select.clear();
            self.ignore.clear();
        }
        self.extend_select.extend(other.extend_select);
        self.ignore.extend(other.ignore);
        self.severity.extend(other.severity);
        self.scoped.extend(other.scoped);
        self.exclude.extend(other.exclude);
    }

    /// Whether these settings report everything as it is (no selection, override or ignore).
    pub fn is_default(&self) -> bool {
        self.select.is_none()
            && self.extend_select.is_empty()
            && self.ignore.is_empty()
            && self.severity.is_empty()
            && self.scoped.is_empty()
    }

    /// Whether findings of `rule` are reported.
    pub fn is_selected(&self, rule: &Rule) -> bool {
        if is_input_problem(rule) {
            return true;
        }
        let default = [Selector::All];
        let select = self.select.as_deref().unwrap_or(&default);
        let best = |list: &[Selector]| list.iter().filter(|s| s.matches(rule)).map(Selector::specificity).max();
        let selected = best(select).max(best(&self.extend_select));
        match (selected, best(&self.ignore)) {
            (None, _) => false,
            (Some(_), None) => true,
            // An ignore as specific as the select wins, as in ruff.
            (Some(s), Some(i)) => s > i,
        }
    }

    /// The severity findings of `rule` are reported at, when overridden.
    pub fn severity_of(&self, rule: &Rule) -> Option<Severity> {
        if is_input_problem(rule) {
            return None;
        }
        let mut best: Option<(usize, Severity)> = None;
        for (selector, severity) in &self.severity {
            if selector.matches(rule) && best.is_none_or(|(s, _)| selector.specificity() >= s) {
                best = Some((selector.specificity(), *severity));
            }
        }
        best.map(|(_, s)| s)
    }

    /// Leaves out of `report` what these settings and the inputs' `xdsck.io/ignore` annotations
    /// ask to, counting each, and applies the severity overrides. `annotations` come from
    /// [`Annotations::of`] on the same run's snapshot.
    pub fn apply(&self, report: &mut Report, sources: &Sources, annotations: &Annotations) {
        // The common case, nothing asked for: 100k findings need not be looked at again.
        if self.is_default() && annotations.by_listener.is_empty() {
            return;
        }
        let paths: BTreeMap<SourceId, Option<String>> =
            sources.iter().map(|(id, file)| (id, self.path_base.path_of(file.name()))).collect();
        let mut suppressed = report.suppressed;
        report.findings.retain_mut(|d| {
            if is_input_problem(d.rule) {
                return true;
            }
            if !self.is_selected(d.rule) {
                suppressed.not_selected += 1;
                return false;
            }
            if annotations.silences(d) {
                suppressed.annotation += 1;
                return false;
            }
            let path = d.location.as_ref().and_then(|l| paths.get(&l.source)).and_then(|p| p.as_deref());
            if self.scoped.iter().any(|s| s.matches(d, path)) {
                suppressed.ignored += 1;
                return false;
            }
            if let Some(severity) = self.severity_of(d.rule) {
                d.severity = severity;
            }
            true
        });
        report.suppressed = suppressed;
    }
}

/// The `xdsck.io/ignore` annotations of a snapshot's CiliumEnvoyConfigs, by listener.
#[derive(Debug, Default)]
pub struct Annotations {
    by_listener: BTreeMap<(SourceId, String), Vec<Selector>>,
}

impl Annotations {
    /// Reads every listener's annotation; an entry that is not a rule becomes an
    /// [`INVALID_SUPPRESSION`] finding at the annotation (the valid ones still apply).
    pub fn of(snapshot: &Snapshot<'_>, sources: &Sources) -> (Self, Vec<Diagnostic>) {
        let mut out = Self::default();
        let mut problems = Vec::new();
        for input in &snapshot.inputs {
            for listener in &input.listeners {
                let Some(annotation) = &listener.ignore_annotation else { continue };
                let mut selectors = Vec::new();
                for entry in annotation.value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                    match Selector::parse_check(entry) {
                        Ok(s) => selectors.push(s),
                        Err(e) => {
                            let offset = input.locator(sources.get(input.source)).locate_pointer(&annotation.pointer);
                            problems.push(
                                Diagnostic::new(
                                    &INVALID_SUPPRESSION,
                                    format!("The `{IGNORE_ANNOTATION}` annotation names `{entry}`, which is not a rule, so it silences nothing on listener '{}'.", listener.name),
                                )
                                .listener(listener.name.as_ref())
                                .at(Location::new(input.source, annotation.pointer.clone(), offset))
                                .note(e.to_string()),
                            );
                        }
                    }
                }
                out.by_listener.entry((input.source, listener.name.to_string())).or_default().extend(selectors);
            }
        }
        problems.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        problems.dedup();
        (out, problems)
    }

    fn silences(&self, d: &Diagnostic) -> bool {
        if self.by_listener.is_empty() {
            return false;
        }
        let (Some(listener), Some(location)) = (&d.listener, &d.location) else { return false };
        self.by_listener
            .get(&(location.source, listener.to_string()))
            .is_some_and(|selectors| selectors.iter().any(|s| s.matches(d.rule)))
    }
}

#[cfg(feature = "config")]
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(feature = "config")]
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    rules: Option<RulesTable>,
    #[serde(default)]
    ignore: Vec<toml::Spanned<IgnoreTable>>,
    #[serde(default)]
    exclude: Vec<toml::Spanned<String>>,
}

#[cfg(feature = "config")]
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
struct RulesTable {
    select: Option<Vec<toml::Spanned<String>>>,
    extend_select: Vec<toml::Spanned<String>>,
    ignore: Vec<toml::Spanned<String>>,
    severity: BTreeMap<String, toml::Spanned<String>>,
}

#[cfg(feature = "config")]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnoreTable {
    rule: toml::Spanned<OneOrMany>,
    listener: Option<toml::Spanned<String>>,
    path: Option<toml::Spanned<String>>,
    /// For the people reading the file; xdsck does not use it.
    #[allow(dead_code)]
    reason: Option<String>,
}

#[cfg(feature = "config")]
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(code: &str) -> &'static Rule {
        crate::rule(code).unwrap()
    }

    #[test]
    fn selectors_by_code_prefix_name_and_all() {
        assert_eq!(Selector::parse("xds301").unwrap(), Selector::Rule(rule("XDS301")));
        assert_eq!(Selector::parse("wildcard-overlap").unwrap(), Selector::Rule(rule("XDS301")));
        assert_eq!(Selector::parse("XDS3").unwrap(), Selector::Prefix("XDS3".into()));
        assert_eq!(Selector::parse("all").unwrap(), Selector::All);
        assert_eq!(Selector::parse("XDS9"), Err(SettingsError::UnknownRule("XDS9".into())));
        assert_eq!(Selector::parse("wildcard"), Err(SettingsError::UnknownRule("wildcard".into())));
        assert!(matches!(Selector::parse_check("XDS0"), Err(SettingsError::InputProblem(_))));
        assert!(matches!(Selector::parse_check("XDS001"), Err(SettingsError::InputProblem(_))));
    }

    #[test]
    fn an_old_name_selects_the_rules_that_carry_its_meaning() {
        let s = Settings::from_lists(None, &[], &["malformed-cidr".into()], &[]).unwrap();
        assert!(!s.is_selected(rule("invalid-cidr")) && !s.is_selected(rule("misleading-cidr")));
        assert!(s.is_selected(rule("partial-wildcard-server-name")));
        // The new name is more specific than the old one.
        let s = Settings::from_lists(Some(&["invalid-server-name".into()]), &[], &["XDS205".into()], &[]).unwrap();
        assert!(s.is_selected(rule("XDS103")) && !s.is_selected(rule("XDS205")) && !s.is_selected(rule("XDS104")));
        let s = Settings::from_lists(None, &[], &[], &["duplicate-listener-name=info".into()]).unwrap();
        assert_eq!(s.severity_of(rule("duplicate-static-listener")), Some(Severity::Info));
        assert_eq!(Selector::parse("malformed-cidr").unwrap().to_string(), "malformed-cidr");
        let s = Settings::from_lists(None, &[], &["sni-blackhole".into(), "matcher-action".into()], &[]).unwrap();
        let left: Vec<&str> = crate::rules().filter(|r| !s.is_selected(r)).map(|r| r.code).collect();
        assert_eq!(left, ["XDS201", "XDS204", "XDS208", "XDS209", "XDS210"]);
    }

    #[test]
    fn the_most_specific_selector_wins_and_ignore_wins_ties() {
        let s = Settings::from_lists(Some(&["XDS2".into()]), &[], &["XDS201".into()], &[]).unwrap();
        assert!(!s.is_selected(rule("XDS201")));
        assert!(s.is_selected(rule("XDS202")));
        assert!(!s.is_selected(rule("XDS301")));
        assert!(s.is_selected(rule("XDS001")), "input problems are always reported");
        let s = Settings::from_lists(Some(&["XDS201".into()]), &[], &["XDS2".into()], &[]).unwrap();
        assert!(s.is_selected(rule("XDS201")));
        assert!(!s.is_selected(rule("XDS202")));
        let s = Settings::from_lists(None, &[], &["XDS3".into()], &[]).unwrap();
        assert!(!s.is_selected(rule("XDS301")));
        let s = Settings::from_lists(Some(&["XDS1".into()]), &["XDS201".into()], &[], &[]).unwrap();
        assert!(s.is_selected(rule("XDS201")) && s.is_selected(rule("XDS101")) && !s.is_selected(rule("XDS202")));
    }

    #[test]
    fn severity_overrides_most_specific_first() {
        let s = Settings::from_lists(None, &[], &[], &["XDS201=info".into(), "XDS2=error".into()]).unwrap();
        assert_eq!(s.severity_of(rule("XDS201")), Some(Severity::Info));
        assert_eq!(s.severity_of(rule("XDS202")), Some(Severity::Error));
        assert_eq!(s.severity_of(rule("XDS301")), None);
        assert!(matches!(parse_severity_override("XDS301"), Err(SettingsError::BadSeverity(_))));
        assert!(matches!(parse_severity_override("XDS301=fatal"), Err(SettingsError::BadSeverity(_))));
    }

    #[cfg(feature = "config")]
    #[test]
    fn toml_config_with_located_errors() {
        let s = Settings::from_toml(
            "[rules]\nignore = [\"XDS202\"]\nseverity = { XDS301 = \"warning\" }\n\n[[ignore]]\nrule = \"XDS301\"\nlistener = \"gateway/*\"\nreason = \"shared wildcard\"\n",
        )
        .unwrap();
        assert!(!s.is_selected(rule("XDS202")));
        assert_eq!(s.severity_of(rule("XDS301")), Some(Severity::Warning));
        assert_eq!(s.scoped.len(), 1);
        assert!(s.scoped[0].listener.as_ref().unwrap().is_match("gateway/cilium/listener-443"));

        let e = Settings::from_toml("[rules]\nselect = [\"XDS1\", \"XDS2O2\"]\n").unwrap_err();
        assert_eq!(e.to_string().split(':').next().unwrap(), "line 2, column 19");
        assert!(e.to_string().contains("`XDS2O2` is not a rule"), "{e}");
        let e = Settings::from_toml("[rule]\nselect = []\n").unwrap_err();
        assert!(matches!(e, SettingsError::Config { line: 1, .. }), "{e}");
        let e = Settings::from_toml("[[ignore]]\nrule = \"XDS301\"\n").unwrap_err();
        assert!(e.to_string().contains("needs `listener` or `path`"), "{e}");
        let e = Settings::from_toml("[rules.severity]\nXDS301 = \"loud\"\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2, column 10:"), "{e}");
        let e = Settings::from_toml("[[ignore]]\nrule = [\"XDS301\", \"nope\"]\npath = \"a\"\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2, column 8: `nope`"), "{e}");
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_cli_select_replaces_the_files_selection() {
        let mut s = Settings::from_toml("[rules]\nignore = [\"XDS110\"]\nextend-select = [\"XDS2\"]\n").unwrap();
        s.extend(Settings::from_lists(Some(&["XDS110".into()]), &[], &[], &[]).unwrap());
        assert!(s.is_selected(rule("XDS110")));
        assert!(!s.is_selected(rule("XDS201")));
    }

    #[test]
    fn path_globs_see_paths_relative_to_the_config() {
        let base = PathBase { root: Some("/repo".into()), prefix: "deploy/".into() };
        assert_eq!(base.path_of("./a/x.yaml").as_deref(), Some("deploy/a/x.yaml"));
        assert_eq!(base.path_of("/repo/b.yaml").as_deref(), Some("b.yaml"));
        assert_eq!(base.path_of("/elsewhere/b.yaml"), None);
        assert_eq!(base.path_of("<stdin>"), None);
        let p = Pattern::path("deploy/*.yaml").unwrap();
        assert!(p.is_match("deploy/x.yaml") && !p.is_match("deploy/a/x.yaml"));
        assert!(Pattern::path("deploy/**/*.yaml").unwrap().is_match("deploy/a/x.yaml"));
        assert!(matches!(Pattern::path("a/[b"), Err(SettingsError::BadGlob { .. })));
    }
}
