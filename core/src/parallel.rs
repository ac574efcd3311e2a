//! Work spread over every core with the `parallel` feature (the CLI), in order either way: the
//! output never depends on which thread finished first. Without it (wasm32) the same calls run
//! on the one thread there is.

/// `items.iter().map(f).collect()`.
#[cfg(feature = "parallel")]
pub(crate) fn par_map<'t, T: Sync, R: Send>(items: &'t [T], f: impl Fn(&'t T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.par_iter().map(f).collect()
}

/// `items.iter().map(f).collect()`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_map<'t, T, R>(items: &'t [T], f: impl Fn(&'t T) -> R) -> Vec<R> {
    items.iter().map(f).collect()
}

/// `items.iter_mut().enumerate().map(|(i, x)| f(i, x)).collect()`, on every core.
#[cfg(feature = "parallel")]
pub(crate) fn par_map_mut<T: Send, R: Send>(items: &mut [T], f: impl Fn(usize, &mut T) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    items.par_iter_mut().enumerate().map(|(i, x)| f(i, x)).collect()
}

/// `items.iter_mut().enumerate().map(|(i, x)| f(i, x)).collect()`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_map_mut<T, R>(items: &mut [T], f: impl Fn(usize, &mut T) -> R) -> Vec<R> {
    items.iter_mut().enumerate().map(|(i, x)| f(i, x)).collect()
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

/// Runs `produce` on this thread, which hands out pieces of work as it finds them (with the
/// function it is given); each piece is done by `work` on another core meanwhile. What
/// `produce` returns, and the work's results in the order the pieces were handed out.
#[cfg(feature = "parallel")]
pub(crate) fn pipeline<W: Send, R: Send, P>(
    produce: impl FnOnce(&mut dyn FnMut(W)) -> P,
    work: impl Fn(W) -> R + Sync,
) -> (P, Vec<R>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let work = &work;
    // In place: `produce` may hold what cannot leave this thread (a walk of the text).
    let produced = rayon::in_place_scope(|s| {
        let mut handed = 0usize;
        produce(&mut |piece| {
            let (tx, i) = (tx.clone(), handed);
            handed += 1;
            s.spawn(move |_| {
                // The receiver outlives the scope: a send cannot fail.
                let _ = tx.send((i, work(piece)));
            });
        })
    });
    drop(tx);
    let mut done: Vec<(usize, R)> = rx.into_iter().collect();
    done.sort_unstable_by_key(|&(i, _)| i);
    (produced, done.into_iter().map(|(_, r)| r).collect())
}

/// `produce`, each piece of work done as it is handed out.
#[cfg(not(feature = "parallel"))]
pub(crate) fn pipeline<W, R, P>(produce: impl FnOnce(&mut dyn FnMut(W)) -> P, work: impl Fn(W) -> R) -> (P, Vec<R>) {
    let mut done = Vec::new();
    let produced = produce(&mut |piece| done.push(work(piece)));
    (produced, done)
}

/// `items.sort_unstable()`, on every core.
#[cfg(feature = "parallel")]
pub(crate) fn par_sort_unstable<T: Ord + Send>(items: &mut [T]) {
    use rayon::prelude::*;
    items.par_sort_unstable();
}

/// `items.sort_unstable()`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_sort_unstable<T: Ord>(items: &mut [T]) {
    items.sort_unstable();
}
