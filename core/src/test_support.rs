//! What several modules' unit tests share.

/// A small fixed-seed generator (xorshift64) for the tests that compare an index with the scan
/// it replaces on many drawn inputs: the same draws on every run and every machine. `next(n)`
/// is a number below `n`.
pub(crate) fn draws(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}
