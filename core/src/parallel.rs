//! Work spread over every core with the `parallel` feature (the CLI), in order either way: the
//! output never depends on which thread finished first. Without it (wasm32) the same calls run
//! on the one thread there is.

/// Fewer items than this, each cheap (a chain's pointer to spell, its keys to read, a name to
/// look up), stay on the calling thread in the `_cheap` forms below. Handing work to the pool
/// and waking its threads costs tens of microseconds, more than a listener of a few chains
/// takes; at 10k such listeners (a gateway with a listener per tenant) it was most of a run.
const CHEAP_MIN: usize = 1024;

/// [`par_map`] of items that each cost little: on every core only when there are many.
pub(crate) fn par_map_cheap<'t, T: Sync, R: Send>(items: &'t [T], f: impl Fn(&'t T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < CHEAP_MIN { items.iter().map(f).collect() } else { par_map(items, f) }
}

/// [`par_map_mut`] of items that each cost little: on every core only when there are many.
pub(crate) fn par_map_mut_cheap<T: Send, R: Send>(
    items: &mut [T],
    f: impl Fn(usize, &mut T) -> R + Sync + Send,
) -> Vec<R> {
    if items.len() < CHEAP_MIN {
        items.iter_mut().enumerate().map(|(i, x)| f(i, x)).collect()
    } else {
        par_map_mut(items, f)
    }
}

/// `out.extend` of what [`par_map_mut_cheap`] would return, written straight into `out`'s room
/// (one list of 100k findings, not a second beside it): on every core only when there are many.
pub(crate) fn par_extend_mut_cheap<T: Send, R: Send>(
    items: &mut [T],
    out: &mut Vec<R>,
    f: impl Fn(usize, &mut T) -> R + Sync + Send,
) {
    if items.len() < CHEAP_MIN {
        out.extend(items.iter_mut().enumerate().map(|(i, x)| f(i, x)));
    } else {
        par_extend_mut(items, out, f);
    }
}

/// [`par_flat_map`] of items that each cost little: on every core only when there are many.
pub(crate) fn par_flat_map_cheap<'t, T: Sync, I: IntoIterator<Item: Send>>(
    items: &'t [T],
    f: impl Fn(&'t T) -> I + Sync + Send,
) -> Vec<I::Item> {
    if items.len() < CHEAP_MIN { items.iter().flat_map(f).collect() } else { par_flat_map(items, f) }
}

/// What `f` adds for each item, in order: on every core when there are many items (each item's
/// share then joined); otherwise all added to one list on the calling thread, so that one item
/// with a large share (one listener's 100k findings) is not copied into another list.
pub(crate) fn par_extend_cheap<'t, T: Sync, R: Send>(
    items: &'t [T],
    f: impl Fn(&'t T, &mut Vec<R>) + Sync + Send,
) -> Vec<R> {
    if items.len() < CHEAP_MIN {
        let mut out = Vec::new();
        for item in items {
            f(item, &mut out);
        }
        out
    } else {
        par_flat_map(items, |item| {
            let mut share = Vec::new();
            f(item, &mut share);
            share
        })
    }
}

/// [`par_sort_unstable`] of a list that may be short: on every core only when it is long.
pub(crate) fn sort_unstable_cheap<T: Ord + Send>(items: &mut [T]) {
    if items.len() < CHEAP_MIN { items.sort_unstable() } else { par_sort_unstable(items) }
}

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

/// `items.iter().flat_map(f).collect()`, on every core: for many items with few results each,
/// no list per item (rayon joins each thread's run of results into the one list).
#[cfg(feature = "parallel")]
pub(crate) fn par_flat_map<'t, T: Sync, I: IntoIterator<Item: Send>>(
    items: &'t [T],
    f: impl Fn(&'t T) -> I + Sync + Send,
) -> Vec<I::Item> {
    use rayon::prelude::*;
    items.par_iter().flat_map_iter(f).collect()
}

/// `items.iter().flat_map(f).collect()`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_flat_map<'t, T, I: IntoIterator>(items: &'t [T], f: impl Fn(&'t T) -> I) -> Vec<I::Item> {
    items.iter().flat_map(f).collect()
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

/// `out.extend(items.iter_mut().enumerate().map(|(i, x)| f(i, x)))` on every core: an indexed
/// iterator's items are written into `out`'s room in place, in order.
#[cfg(feature = "parallel")]
pub(crate) fn par_extend_mut<T: Send, R: Send>(
    items: &mut [T],
    out: &mut Vec<R>,
    f: impl Fn(usize, &mut T) -> R + Sync + Send,
) {
    use rayon::prelude::*;
    out.par_extend(items.par_iter_mut().enumerate().map(|(i, x)| f(i, x)));
}

/// `out.extend(items.iter_mut().enumerate().map(|(i, x)| f(i, x)))`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn par_extend_mut<T, R>(items: &mut [T], out: &mut Vec<R>, f: impl Fn(usize, &mut T) -> R) {
    out.extend(items.iter_mut().enumerate().map(|(i, x)| f(i, x)));
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

/// `(background(), here())`: `background` on another core while `here` runs on this thread,
/// which may hold what cannot leave it (a locked stdout).
#[cfg(feature = "parallel")]
pub(crate) fn beside<A: Send, B>(background: impl FnOnce() -> A + Send, here: impl FnOnce() -> B) -> (A, B) {
    let mut done = None;
    let slot = &mut done;
    let b = rayon::in_place_scope(move |s| {
        s.spawn(move |_| *slot = Some(background()));
        here()
    });
    // The scope returns only when what it spawned has finished.
    (done.expect("a scope waits for what it spawned"), b)
}

/// `(background(), here())`.
#[cfg(not(feature = "parallel"))]
pub(crate) fn beside<A, B>(background: impl FnOnce() -> A, here: impl FnOnce() -> B) -> (A, B) {
    (background(), here())
}

/// Runs `produce` on this thread, which hands out pieces of work as it finds them (with the
/// function it is given); each piece is done by `work` on another core meanwhile. Then `take`
/// is given the results on this thread, in the order the pieces were handed out, each as soon
/// as it and those before it are done: what the caller does with them (a tenant listener's
/// 40k chains joined into one list) overlaps the last pieces' work instead of following it on
/// one core. What `produce` returns.
#[cfg(feature = "parallel")]
pub(crate) fn pipeline<W: Send, R: Send, P>(
    produce: impl FnOnce(&mut dyn FnMut(W)) -> P,
    work: impl Fn(W) -> R + Sync,
    mut take: impl FnMut(R),
) -> P {
    let (tx, rx) = std::sync::mpsc::channel();
    let work = &work;
    // In place: `produce` and `take` may hold what cannot leave this thread (a walk of the text).
    rayon::in_place_scope(move |s| {
        let mut handed = 0usize;
        let produced = produce(&mut |piece| {
            let (tx, i) = (tx.clone(), handed);
            handed += 1;
            s.spawn(move |_| {
                // The receiver outlives the scope: a send cannot fail.
                let _ = tx.send((i, work(piece)));
            });
        });
        // Every piece holds a clone of the sender: the results end when the last piece is done.
        drop(tx);
        let mut done: Vec<Option<R>> = std::iter::repeat_with(|| None).take(handed).collect();
        let mut next = 0;
        for (i, result) in rx {
            done[i] = Some(result);
            while let Some(result) = done.get_mut(next).and_then(Option::take) {
                take(result);
                next += 1;
            }
        }
        produced
    })
}

/// `produce`, each piece of work done as it is handed out; then `take` given the results.
#[cfg(not(feature = "parallel"))]
pub(crate) fn pipeline<W, R, P>(
    produce: impl FnOnce(&mut dyn FnMut(W)) -> P,
    work: impl Fn(W) -> R,
    take: impl FnMut(R),
) -> P {
    let mut done = Vec::new();
    let produced = produce(&mut |piece| done.push(work(piece)));
    done.into_iter().for_each(take);
    produced
}

/// Drops every list, the items of a long one on every core too: a tenant-scale model is
/// millions of small allocations, and freeing them on one core at the end of a run was a
/// one-core phase of a few percent of it.
#[cfg(feature = "parallel")]
pub(crate) fn drop_all<T: Send>(lists: Vec<Vec<T>>) {
    use rayon::prelude::*;
    lists.into_par_iter().for_each(|list| {
        if list.len() < CHEAP_MIN {
            drop(list);
        } else {
            list.into_par_iter().for_each(drop);
        }
    });
}

/// Drops every list.
#[cfg(not(feature = "parallel"))]
pub(crate) fn drop_all<T>(lists: Vec<Vec<T>>) {
    drop(lists);
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
