//! The checks. Each lives in its own file and reads top to bottom: its [`Rule`], how it builds
//! its diagnostic, then its logic. [`ALL`] is the one explicit registry.

mod rejected_update;

use crate::diagnostic::{Diagnostic, Rule};
use crate::model::Snapshot;
use crate::source::Sources;

/// What a check is given.
#[derive(Debug, Clone, Copy)]
pub struct Context<'s, 'a> {
    pub snapshot: &'s Snapshot<'a>,
    pub sources: &'s Sources,
}

/// One check.
pub trait Check: Sync {
    fn rule(&self) -> &'static Rule;
    fn run(&self, cx: Context<'_, '_>, out: &mut Vec<Diagnostic>);
}

/// Every check, in code order.
pub static ALL: &[&dyn Check] = &[&rejected_update::RejectedUpdate];

/// Runs every check.
pub fn run_all(cx: Context<'_, '_>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for check in ALL {
        check.run(cx, &mut out);
    }
    out
}
