//! Lists that mostly hold one or two items, grown a slot at a time while they are short.
//!
//! A `Vec`'s first push makes room for four (for items up to 1 KB), and it doubles from there:
//! right for a list that goes on growing, a waste for the many that stay at one or two, where
//! the three empty slots outlive the push. A finding's notes are such a list (100k findings
//! held theirs until written; its one chain and one place are held in place, `OneOrList`), and
//! so is nearly every repeated field of Envoy's config as it is read: a listener's one
//! `listener_filters` entry, 112 bytes read, took 448.

/// Pushes `item`, making room for just it while the list is shorter than four; from four on
/// the list grows as any `Vec` does (doubling), so a long list is copied no more often than
/// one that `push` alone grew, give or take three copies.
pub(crate) fn push_short<T>(list: &mut Vec<T>, item: T) {
    if list.len() == list.capacity() && list.len() < 4 {
        list.reserve_exact(1);
    }
    list.push(item);
}

#[cfg(test)]
mod tests {
    use super::push_short;

    #[test]
    fn a_short_list_has_no_spare_room_and_a_long_one_doubles() {
        let mut list = Vec::new();
        for n in 1..=4 {
            push_short(&mut list, [0u8; 112]);
            assert_eq!((list.len(), list.capacity()), (n, n));
        }
        push_short(&mut list, [0u8; 112]);
        assert_eq!(list.len(), 5);
        assert!(list.capacity() >= 8, "past four the list doubles: {}", list.capacity());
    }
}
