//! The command line. `xdsck PATH...` is `xdsck check PATH...`: the check arguments are also
//! accepted at the top level, and a subcommand name as first argument wins.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "xdsck",
    version,
    about = "Find Envoy filter chains that collide, shadow each other or can never be reached.",
    after_help = "Exit status: 0 nothing at or above --fail-on, 1 something is, 2 an input could not be read or loaded, or the arguments are wrong.",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// `xdsck PATH...`, the same as `xdsck check PATH...`.
    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check Envoy configuration: config_dump, bootstrap, listeners, xDS responses, CiliumEnvoyConfig.
    Check(CheckArgs),
    /// List every rule: code, name, default severity, summary.
    Rules {
        #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
        format: RulesFormat,
    },
    /// Explain a rule: what it finds, why it matters, an example, the fix.
    Explain {
        /// A code (`XDS101`) or a name (`duplicate-filter-chain-match`).
        rule: String,
    },
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files to check; `-` reads standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The lowest severity that makes the exit status 1.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub fail_on: FailOn,
    /// Colour the text output: `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
    Github,
}

impl From<Format> for xdsck_core::report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Text => Self::Text,
            Format::Json => Self::Json,
            Format::Sarif => Self::Sarif,
            Format::Github => Self::Github,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    Text,
    Json,
}
