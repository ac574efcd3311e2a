//! `xdsck-schema-gen [--envoy PATH] [--out DIR] [--check]`: regenerates `core/schema/` from the
//! real Envoy, or with `--check` says whether the committed files are still what it makes.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};

const USAGE: &str = "usage: xdsck-schema-gen [--envoy PATH] [--out DIR] [--check]

Regenerates envoy.binpb, extensions.tsv and envoy.version from an Envoy binary.
  --envoy PATH  the Envoy to read (default: $XDSCK_ENVOY, else what scripts/install-envoy.sh prints)
  --out DIR     where the files go (default: <workspace>/core/schema)
  --check       write nothing; exit 1 if the files in DIR differ from what Envoy gives";

struct Args {
    envoy: Option<PathBuf>,
    out: Option<PathBuf>,
    check: bool,
}

fn parse_args() -> anyhow::Result<Option<Args>> {
    let mut args = Args { envoy: None, out: None, check: false };
    let mut argv = std::env::args_os().skip(1);
    while let Some(arg) = argv.next() {
        match arg.to_str() {
            Some("--envoy") => args.envoy = Some(argv.next().context("--envoy needs a path")?.into()),
            Some("--out") => args.out = Some(argv.next().context("--out needs a directory")?.into()),
            Some("--check") => args.check = true,
            Some("-h" | "--help") => return Ok(None),
            _ => bail!("unexpected argument {}\n\n{USAGE}", arg.to_string_lossy()),
        }
    }
    Ok(Some(args))
}

fn main() -> anyhow::Result<ExitCode> {
    let Some(args) = parse_args()? else {
        println!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    };
    let envoy = match args.envoy {
        Some(path) => path,
        None => xdsck_schema_gen::find_envoy()?,
    };
    let out = args.out.unwrap_or_else(xdsck_schema_gen::default_out_dir);

    let started = Instant::now();
    let generated =
        xdsck_schema_gen::generate(&envoy).with_context(|| format!("reading the schema of {}", envoy.display()))?;
    let selection = &generated.descriptors;
    eprintln!(
        "Envoy {}: kept {} of {} embedded .proto files ({} messages), {} extensions, in {:.1} s",
        generated.server_info.version,
        selection.files.len(),
        selection.found,
        selection.message_count(),
        generated.server_info.extensions.len(),
        started.elapsed().as_secs_f64()
    );

    if args.check {
        let stale = xdsck_schema_gen::stale(&generated, &out);
        if stale.is_empty() {
            println!("{} is current", out.display());
            return Ok(ExitCode::SUCCESS);
        }
        for path in &stale {
            eprintln!("{} differs from what {} gives", path.display(), envoy.display());
        }
        eprintln!("regenerate with: cargo run -p xdsck-schema-gen");
        return Ok(ExitCode::from(1));
    }

    xdsck_schema_gen::write(&generated, &out)?;
    for (name, contents) in generated.files() {
        println!("{} ({} bytes)", out.join(name).display(), contents.len());
    }
    Ok(ExitCode::SUCCESS)
}
