//! What `check` and `attach` report: the flags and `xdsck.toml` turned into core's
//! [`Settings`], and the baseline read or written. The rules of selection live in core; this
//! only finds files and reads them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use xdsck_core::baseline::Baseline;
use xdsck_core::report::Report;
use xdsck_core::settings::{Settings, SettingsError};

use crate::args::ReportArgs;

/// The config file's name, looked for in the working directory and then each parent.
pub const CONFIG_FILE: &str = "xdsck.toml";

/// The settings and baseline of one run.
#[derive(Debug)]
pub struct Reporting {
    pub settings: Settings,
    /// The config file read, if any.
    config: Option<PathBuf>,
    baseline: Option<Baseline>,
    write_baseline: Option<PathBuf>,
}

impl Reporting {
    /// Reads the config file (`--config`, or `xdsck.toml` found upward, unless `--no-config`),
    /// lays the flags over it, and reads `--baseline`.
    pub fn from_args(args: &ReportArgs) -> Result<Self> {
        let cwd = std::env::current_dir().context("finding the working directory")?;
        let config = match (&args.config, args.no_config) {
            (_, true) => None,
            (Some(path), false) => Some(path.clone()),
            (None, false) => find_upward(&cwd),
        };
        let mut settings = match &config {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                let mut settings = Settings::from_toml(&text).map_err(|e| located(path, e))?;
                settings.path_base = path_base(path, &cwd);
                settings
            }
            None => Settings::default(),
        };
        let flags = Settings::from_lists(args.select.as_deref(), &args.extend_select, &args.ignore, &args.severity)
            .map_err(|e| anyhow::anyhow!("{e}{}", suggestion(&e)))?;
        settings.extend(flags);
        let baseline = match &args.baseline {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                Some(Baseline::from_json(&text).with_context(|| format!("{}", path.display()))?)
            }
            None => None,
        };
        Ok(Self { settings, config, baseline, write_baseline: args.write_baseline.clone() })
    }

    /// The core options for a run.
    pub fn options(&self, max_bytes: usize) -> xdsck_core::Options {
        let mut options = xdsck_core::Options { settings: self.settings.clone(), ..Default::default() };
        options.limits.max_bytes = max_bytes;
        options
    }

    /// Writes the baseline (`--write-baseline`: then every finding written is accepted, so the
    /// run passes) or applies the one read (`--baseline`).
    pub fn finish(&self, report: &mut Report) -> Result<()> {
        if let Some(path) = &self.write_baseline {
            let baseline = Baseline::of(report);
            std::fs::write(path, baseline.to_json()).with_context(|| format!("writing {}", path.display()))?;
            baseline.apply(report);
        } else if let Some(baseline) = &self.baseline {
            baseline.apply(report);
        }
        Ok(())
    }

    /// The settings in force, for `--show-settings`: the config file, `exclude`, the selection
    /// as written, then each rule with the severity it is reported at (or "not reported"),
    /// then `files`, what the run would read.
    pub fn show(&self, files: &[(PathBuf, bool)]) -> String {
        use std::fmt::Write as _;
        let s = &self.settings;
        let mut out = String::new();
        let config = match &self.config {
            Some(path) => path.display().to_string(),
            None => "none".to_owned(),
        };
        writeln!(out, "config file: {config}").unwrap();
        let list = |v: &[xdsck_core::settings::Selector]| {
            if v.is_empty() { "-".to_owned() } else { v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ") }
        };
        let select = s.select.as_deref().map_or_else(|| "ALL (the default)".to_owned(), list);
        writeln!(out, "select: {select}").unwrap();
        writeln!(out, "extend-select: {}", list(&s.extend_select)).unwrap();
        writeln!(out, "ignore: {}", list(&s.ignore)).unwrap();
        let severity: Vec<String> = s.severity.iter().map(|(sel, sev)| format!("{sel}={}", sev.as_str())).collect();
        writeln!(out, "severity: {}", if severity.is_empty() { "-".to_owned() } else { severity.join(", ") }).unwrap();
        for scoped in &s.scoped {
            let mut on = Vec::new();
            if let Some(l) = &scoped.listener {
                on.push(format!("listener {}", l.as_str()));
            }
            if let Some(p) = &scoped.path {
                on.push(format!("path {}", p.as_str()));
            }
            writeln!(out, "ignore {} on {}", list(&scoped.rules), on.join(" and ")).unwrap();
        }
        let exclude: Vec<&str> = s.exclude.iter().map(|p| p.as_str()).collect();
        writeln!(out, "exclude: {}", if exclude.is_empty() { "-".to_owned() } else { exclude.join(", ") }).unwrap();
        let rules: Vec<&xdsck_core::Rule> = xdsck_core::rules().collect();
        let reported = rules.iter().filter(|r| s.is_selected(r)).count();
        writeln!(out, "\nrules: {reported} of {} reported", rules.len()).unwrap();
        let width = rules.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for r in rules {
            let at = if !s.is_selected(r) {
                "not reported".to_owned()
            } else {
                match s.severity_of(r) {
                    Some(sev) if sev != r.severity => format!("{} (default {})", sev.as_str(), r.severity.as_str()),
                    _ => r.severity.as_str().to_owned(),
                }
            };
            writeln!(out, "  {:<7} {:<width$} {at}", r.code, r.name).unwrap();
        }
        if !files.is_empty() {
            writeln!(out, "\nfiles: {}", files.len()).unwrap();
            for (path, walked) in files {
                let how = if *walked { "found" } else { "named" };
                writeln!(out, "  {} ({how})", path.display()).unwrap();
            }
        }
        out
    }

    pub fn writes_baseline(&self) -> bool {
        self.write_baseline.is_some()
    }
}

fn find_upward(start: &Path) -> Option<PathBuf> {
    start.ancestors().map(|dir| dir.join(CONFIG_FILE)).find(|p| p.is_file())
}

/// `[[ignore]] path` globs are relative to the config file's directory.
fn path_base(config: &Path, cwd: &Path) -> xdsck_core::settings::PathBase {
    let dir = config.parent().map(|d| cwd.join(d)).unwrap_or_else(|| cwd.to_path_buf());
    let dir = dir.canonicalize().unwrap_or(dir);
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let prefix = match cwd.strip_prefix(&dir) {
        Ok(rel) if rel.as_os_str().is_empty() => String::new(),
        Ok(rel) => format!("{}/", rel.to_string_lossy().replace('\\', "/")),
        Err(_) => String::new(),
    };
    xdsck_core::settings::PathBase { root: Some(dir.to_string_lossy().into_owned()), prefix }
}

/// A config file error as `path:line:column: message`.
fn located(path: &Path, e: SettingsError) -> anyhow::Error {
    match &e {
        SettingsError::Config { line, column, message } => {
            anyhow::anyhow!("{}:{line}:{column}: {message}", path.display())
        }
        _ => anyhow::anyhow!("{}: {e}", path.display()),
    }
}

/// "did you mean" for a selector that names no rule.
fn suggestion(e: &SettingsError) -> String {
    match e {
        SettingsError::UnknownRule(s) => {
            let close = crate::rules::close_matches(s);
            if close.is_empty() { String::new() } else { format!("; did you mean {}?", close.join(", ")) }
        }
        _ => String::new(),
    }
}

/// `--write-baseline` is for a run that ends; `attach --watch` does not.
pub fn check_watch(reporting: &Reporting, watch: bool) -> Result<()> {
    if watch && reporting.writes_baseline() {
        bail!("--write-baseline records one run's findings; leave out --watch");
    }
    Ok(())
}
