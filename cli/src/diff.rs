//! `xdsck diff OLD NEW`: what a change does to traffic. Reads the two sides (inputs as `check`
//! reads them, or a running proxy as `attach` does), hands them to `xdsck_core::diff` and prints
//! its answer; the classes and the renderings are core's, the exit status is decided here.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use xdsck_core::report::diff as render;
use xdsck_core::{Diagnostic, Sources};

use crate::args::{DiffArgs, DiffFailOn, TraceFormat};
use crate::{CLEAN, FAILED, FOUND, input, print};

pub fn run(args: &DiffArgs) -> Result<u8> {
    let (old, new) = match (args.sides.as_slice(), args.old.is_empty()) {
        ([old, new], true) => (vec![old.clone()], vec![new.clone()]),
        ([], false) => (args.old.clone(), args.new.clone()),
        _ => bail!("give the two versions: xdsck diff OLD NEW, or --old INPUT... --new INPUT..."),
    };
    let timeout = crate::attach::seconds(args.timeout, "--timeout")?;
    let (old_sources, old_failed) = read_side(&old, timeout)?;
    let (new_sources, new_failed) = read_side(&new, timeout)?;
    let paths = (render::paths(old.iter().map(String::as_str)), render::paths(new.iter().map(String::as_str)));
    let run = xdsck_core::diff(
        (&old_sources, old_failed),
        (&new_sources, new_failed),
        (&paths.0, &paths.1),
        &args.prefer_addresses,
    );
    if run.unreadable {
        print(&run.text)?;
        return Ok(FAILED);
    }
    print(match args.format {
        TraceFormat::Text => &run.text,
        TraceFormat::Json => &run.json,
    })?;
    let fails = |f: DiffFailOn| args.fail_on.contains(&f) && !args.fail_on.contains(&DiffFailOn::Never);
    let failed =
        (fails(DiffFailOn::Traffic) && run.moves_traffic) || (fails(DiffFailOn::Findings) && run.new_findings > 0);
    Ok(if failed { FOUND } else { CLEAN })
}

/// Whether an input names a running proxy rather than a file: an address with a scheme, or a
/// socket.
fn is_live(input: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    input.contains("://") || std::fs::metadata(input).is_ok_and(|m| m.file_type().is_socket())
}

/// One side's sources: one running proxy, or files as `check` reads them.
fn read_side(inputs: &[String], timeout: std::time::Duration) -> Result<(Sources, Vec<Diagnostic>)> {
    match inputs {
        [one] if is_live(one) => crate::attach::read_once(one, timeout, xdsck_core::load::DEFAULT_MAX_BYTES),
        _ if inputs.iter().any(|i| is_live(i)) => {
            bail!("a running proxy is a side by itself: give it alone as OLD or NEW")
        }
        _ => {
            let paths: Vec<PathBuf> = inputs.iter().map(|i| Path::new(i).to_path_buf()).collect();
            Ok(input::read_sources(&paths, xdsck_core::load::DEFAULT_MAX_BYTES))
        }
    }
}
