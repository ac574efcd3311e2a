//! Work spread over every core with the `parallel` feature (the CLI), in order either way: the
//! output never depends on which thread finished first. Without it (wasm32) the same calls run
//! on the one thread there is.

/// `items.iter().map(f).collect()`.
#[cfg(feature = "parallel")]
pub(crate) fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.par_iter().map(f).collect()
}

/// `items.iter().map(f).collect()`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_map<T, R>(items: &[T], f: impl Fn(&T) -> R) -> Vec<R> {
    items.iter().map(f).collect()
}

/// `(a(), b())`, the two at once.
#[cfg(feature = "parallel")]
pub(crate) fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    rayon::join(a, b)
}

/// `(a(), b())`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn join<A, B>(a: impl FnOnce() -> A, b: impl FnOnce() -> B) -> (A, B) {
    (a(), b())
}

/// How many threads [`par_map`] spreads work over.
#[cfg(feature = "parallel")]
pub(crate) fn threads() -> usize {
    rayon::current_num_threads()
}

/// How many threads [`par_map`] spreads work over.
#[cfg(not(feature = "parallel"))]
pub(crate) fn threads() -> usize {
    1
}
