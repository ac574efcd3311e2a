//! `xdsck`: arguments, files and stdin, exit codes, the choice of renderer. No Envoy logic lives
//! here; everything else is `xdsck-core`.

mod args;
mod attach;
mod config;
mod diff;
mod gateway;
mod input;
mod metrics;
mod rules;
mod trace;
mod webhook;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use xdsck_core::report::{self, RenderOptions, Report};
use xdsck_core::{Severity, Sources};

use args::{CheckArgs, Cli, Color, Command, FailOn, ReportArgs, RulesFormat};

// Loading allocates and frees many small values on both cores: with jemalloc a whole run takes
// about a tenth less wall time than with glibc's malloc, the same peak at 100k (docs/architecture.md).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The exit statuses the README promises (0 clean, 1 findings, 2 unreadable input or bad arguments).
pub(crate) const CLEAN: u8 = 0;
pub(crate) const FOUND: u8 = 1;
pub(crate) const FAILED: u8 = 2;

fn main() -> ExitCode {
    // Usage errors exit 2 from here (clap's default), help and version 0.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(e) = mistyped_subcommand(&args) {
        e.exit();
    }
    let cli = Cli::parse_from(args);
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // The one place that speaks to stderr: what went wrong with the invocation itself.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("xdsck: error: {e:#}");
            }
            ExitCode::from(FAILED)
        }
    }
}

/// `xdsck rule`: a first argument that is no file and is close to a subcommand's name was
/// meant as that subcommand, not as an input to check (`xdsck PATH...` is `xdsck check`).
/// Clap's own "unrecognized subcommand" error, with its "a similar subcommand exists" tip.
fn mistyped_subcommand(args: &[std::ffi::OsString]) -> Option<clap::Error> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let first = args.get(1)?.to_str()?;
    if first.starts_with('-') || first.contains(['/', '.', '\\']) || std::path::Path::new(first).exists() {
        return None;
    }
    let mut cmd = Cli::command();
    let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    if names.iter().any(|n| n == first) {
        return None;
    }
    // Clap's own threshold for suggesting a subcommand.
    let similar = names
        .iter()
        .filter(|n| strsim::jaro(first, n) > 0.7)
        .max_by(|a, b| strsim::jaro(first, a).total_cmp(&strsim::jaro(first, b)))?;
    cmd.build();
    let mut e = clap::Error::new(ErrorKind::InvalidSubcommand).with_cmd(&cmd);
    e.insert(ContextKind::InvalidSubcommand, ContextValue::String(first.to_owned()));
    e.insert(ContextKind::SuggestedSubcommand, ContextValue::Strings(vec![similar.clone()]));
    e.insert(ContextKind::Usage, ContextValue::StyledStr(cmd.render_usage()));
    Some(e)
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Some(Command::Check(check)) => run_check(&check),
        Some(Command::Rules { format: RulesFormat::Text }) => print(&rules::table()).map(|()| CLEAN),
        Some(Command::Rules { format: RulesFormat::Json }) => print(&rules::json()).map(|()| CLEAN),
        Some(Command::Explain { rule }) => print(&rules::explain(&rule)?).map(|()| CLEAN),
        Some(Command::Trace(args)) => trace::run(&args),
        Some(Command::Graph(args)) => trace::graph(&args),
        Some(Command::Diff(args)) => diff::run(&args),
        Some(Command::Attach(args)) => attach::run(&args),
        Some(Command::Webhook(args)) => webhook::run(&args),
        Some(Command::Gateway(args)) => gateway::run(&args),
        Some(Command::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "xdsck", &mut out);
            print(&String::from_utf8_lossy(&out)).map(|()| CLEAN)
        }
        Some(Command::Manpage { dir: None }) => {
            let mut out = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
            print(&String::from_utf8_lossy(&out)).map(|()| CLEAN)
        }
        Some(Command::Manpage { dir: Some(dir) }) => {
            clap_mangen::generate_to(<Cli as clap::CommandFactory>::command(), &dir)
                .with_context(|| format!("writing the man pages into {}", dir.display()))?;
            Ok(CLEAN)
        }
        None => run_check(&cli.check),
    }
}

fn run_check(args: &CheckArgs) -> Result<u8> {
    check_report_args(&args.report)?;
    // `xdsck --format json check f`: the options went before the subcommand, so it was taken
    // for a file to read.
    if let Some(word) =
        args.paths.iter().filter_map(|p| p.to_str()).find(|p| is_subcommand(p) && !std::path::Path::new(p).exists())
    {
        anyhow::bail!(
            "`{word}` is a subcommand, read here as a file: options go after the subcommand (`xdsck {word} [OPTIONS] ...`)"
        );
    }
    // Envoy's schema is compiled on first use (some 40 ms): meanwhile the inputs are found and
    // read. Whoever asks first waits for the one compilation.
    std::thread::spawn(|| {
        xdsck_core::schema::Schema::get();
    });
    let reporting = config::Reporting::from_args(&args.report)?;
    let files = input::expand(&args.paths, &|p| reporting.settings.excludes(p), args.found);
    if args.show_settings {
        return print(&reporting.show(&files)).map(|()| CLEAN);
    }
    let (sources, failed) = input::read_expanded(&files, args.report.outcome.max_bytes);
    // The process ends once the report is written: the model is not freed (nor, below, the
    // report and the inputs).
    let options = xdsck_core::Options {
        one_envoy: args.one_envoy,
        keep_model: true,
        ..reporting.options(args.report.outcome.max_bytes)
    };
    let mut report = xdsck_core::analyze_except(&sources, &options, failed);
    reporting.finish(&mut report)?;
    let code = write_report(&args.report, &report, &sources)?;
    // The process ends next: freeing a few hundred MB of input and findings piece by piece
    // (millions of allocations at tenant scale) would only cost time.
    std::mem::forget(report);
    std::mem::forget(sources);
    Ok(code)
}

/// Writes a report to stdout as it renders (100k findings are 100+ MB of output, never held as
/// one string) and returns the exit status it calls for.
pub(crate) fn write_report(args: &ReportArgs, report: &Report, sources: &Sources) -> Result<u8> {
    write_report_after(args, "", report, true, sources)
}

/// [`write_report`] with `preamble` written first (`gateway`'s conditions, or its JSON, which
/// holds the findings: then `findings` is false and only the preamble is written).
pub(crate) fn write_report_after(
    args: &ReportArgs,
    preamble: &str,
    report: &Report,
    findings: bool,
    sources: &Sources,
) -> Result<u8> {
    // A file gets no colour unless asked for: it is read later, not on this terminal.
    let color = match &args.output {
        Some(_) => matches!(args.outcome.color, Color::Always),
        None => use_color(args.outcome.color),
    };
    let options = RenderOptions { color, quiet: args.quiet };
    let sink: Box<dyn std::io::Write> = match &args.output {
        Some(path) => Box::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, sink);
    let written = std::io::Write::write_all(&mut out, preamble.as_bytes())
        .and_then(|()| match (findings, args.statistics) {
            (false, _) => Ok(()),
            (true, true) => report::write_statistics(args.format.into(), report, sources, options, &mut out),
            (true, false) => report::write(args.format.into(), report, sources, options, &mut out),
        })
        .and_then(|()| out.flush());
    drop(out);
    match &args.output {
        Some(path) => written.with_context(|| format!("writing {}", path.display()))?,
        None => done_writing(written)?,
    }
    Ok(exit_code(report, args.outcome.fail_on))
}

/// Flag combinations clap cannot express.
pub(crate) fn check_report_args(args: &ReportArgs) -> Result<()> {
    if args.statistics && !matches!(args.format, args::Format::Text | args::Format::Json) {
        anyhow::bail!("--statistics prints text or json");
    }
    Ok(())
}

pub(crate) fn exit_code(report: &Report, fail_on: FailOn) -> u8 {
    if report.failed_inputs > 0 {
        return FAILED;
    }
    let threshold = match fail_on {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::Info => Severity::Info,
        FailOn::Never => return CLEAN,
    };
    if report.max_severity().is_some_and(|s| s >= threshold) { FOUND } else { CLEAN }
}

/// Colour only for a person at a terminal, and never when they asked for none
/// (<https://no-color.org>: NO_COLOR set and not empty). `--color always` overrides NO_COLOR, as
/// an explicit flag should.
pub(crate) fn use_color(choice: Color) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// Writes the whole output to stdout, the only thing that ever goes there. A closed pipe
/// (`xdsck dump.json | head`) is not an error: the reader has what it wanted.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    done_writing(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// The outcome of writing to stdout, where a closed pipe is success.
fn done_writing(written: std::io::Result<()>) -> Result<()> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// Whether `word` names one of xdsck's subcommands.
fn is_subcommand(word: &str) -> bool {
    <Cli as clap::CommandFactory>::command().get_subcommands().any(|c| c.get_name() == word)
}
