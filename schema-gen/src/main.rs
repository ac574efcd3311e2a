//! `xdsck-schema-gen [--envoy PATH] [--out DIR] [--check]`: regenerates `core/schema/` from the
//! real Envoy, or with `--check` says whether the committed files are still what it makes.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};

const USAGE: &str = "usage: xdsck-schema-gen [--envoy PATH] [--out DIR] [--check | --compile]

Regenerates envoy.binpb, extensions.tsv and envoy.version from an Envoy binary,
categories.tsv from the .proto files of the envoy-types the workspace depends on, and
schema.postcard, the schema xdsck reads at start, compiled from those.
  --envoy PATH  the Envoy to read (default: $XDSCK_ENVOY, else what scripts/install-envoy.sh prints)
  --out DIR     where the files go (default: <workspace>/core/schema)
  --check       write nothing; exit 1 if the files in DIR differ from what Envoy and envoy-types give
  --compile     no Envoy: rewrite only schema.postcard, from the other files in DIR";

struct Args {
    envoy: Option<PathBuf>,
    out: Option<PathBuf>,
    check: bool,
    compile: bool,
}

fn parse_args() -> anyhow::Result<Option<Args>> {
    let mut args = Args { envoy: None, out: None, check: false, compile: false };
    let mut argv = std::env::args_os().skip(1);
    while let Some(arg) = argv.next() {
        match arg.to_str() {
            Some("--envoy") => args.envoy = Some(argv.next().context("--envoy needs a path")?.into()),
            Some("--out") => args.out = Some(argv.next().context("--out needs a directory")?.into()),
            Some("--check") => args.check = true,
            Some("--compile") => args.compile = true,
            Some("-h" | "--help") => return Ok(None),
            _ => bail!("unexpected argument {}\n\n{USAGE}", arg.to_string_lossy()),
        }
    }
    Ok(Some(args))
}

/// Prints how the annotated slots compare with the build; informational, it fails nothing.
fn report_cross_check(generated: &xdsck_schema_gen::Generated) -> anyhow::Result<()> {
    let check = generated.cross_check()?;
    let envoy = generated.server_info.version.split(' ').next().unwrap_or_default();
    let list = |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
    eprintln!(
        "categories annotations name that no extension of Envoy {envoy} is in ({}): {}",
        check.not_in_build.len(),
        list(&check.not_in_build)
    );
    eprintln!(
        "categories of Envoy {envoy}'s extensions that no annotation names ({}): {}",
        check.not_annotated.len(),
        list(&check.not_annotated)
    );
    eprintln!(
        "annotated slots whose message Envoy {envoy} does not have ({}): {}",
        check.missing_messages.len(),
        list(&check.missing_messages)
    );
    eprintln!(
        "annotated slots whose field Envoy {envoy} does not have ({}): {}",
        check.missing_fields.len(),
        list(&check.missing_fields)
    );
    eprintln!(
        "Envoy {envoy}'s slots that envoy-types does not annotate: cannot be told, its descriptors have no comments"
    );
    Ok(())
}

fn main() -> anyhow::Result<ExitCode> {
    let Some(args) = parse_args()? else {
        println!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    };
    if args.compile {
        let out = args.out.unwrap_or_else(xdsck_schema_gen::default_out_dir);
        let (path, bytes) = xdsck_schema_gen::recompile(&out)?;
        std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
        println!("{} ({} bytes)", path.display(), bytes.len());
        return Ok(ExitCode::SUCCESS);
    }
    let envoy = match args.envoy {
        Some(path) => path,
        None => xdsck_schema_gen::find_envoy()?,
    };
    let out = args.out.unwrap_or_else(xdsck_schema_gen::default_out_dir);

    let started = Instant::now();
    let envoy_types = xdsck_schema_gen::categories::find_envoy_types(&xdsck_schema_gen::workspace_root())?;
    let generated = xdsck_schema_gen::generate(&envoy, &envoy_types)
        .with_context(|| format!("reading the schema of {}", envoy.display()))?;
    let selection = &generated.descriptors;
    let categories = &generated.categories;
    eprintln!(
        "Envoy {}: kept {} of {} embedded .proto files ({} messages), {} extensions; \
         envoy-types {}: {} annotated slots ({} through their oneof) in {} .proto files; in {:.1} s",
        generated.server_info.version,
        selection.files.len(),
        selection.found,
        selection.message_count(),
        generated.server_info.extensions.len(),
        categories.version,
        categories.slots.len(),
        categories.from_oneofs,
        categories.files,
        started.elapsed().as_secs_f64()
    );
    report_cross_check(&generated)?;

    if args.check {
        let stale = xdsck_schema_gen::stale(&generated, &out);
        if stale.is_empty() {
            println!("{} is current", out.display());
            return Ok(ExitCode::SUCCESS);
        }
        for path in &stale {
            eprintln!(
                "{} differs from what {} and envoy-types {} give",
                path.display(),
                envoy.display(),
                envoy_types.version
            );
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
