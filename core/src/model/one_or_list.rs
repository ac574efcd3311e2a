//! A list that holds its one item in place.
//!
//! Most of a tenant listener's lists hold exactly one item: each of its 400k chains has one
//! network filter and mostly one server name, and each passthrough chain's `tcp_proxy` one
//! cluster. As a `ThinVec` each such list was an allocation of its own (a 16-byte header and
//! the item: 72 bytes for a filter, 32 for a name); here the one item sits where the list's
//! pointer was, and only an empty list or one of two or more is a `ThinVec`. The enum takes no
//! word for its tag when the item has a niche (a `Text`'s pointer, a filter's name): a list of
//! names is 16 bytes, of filters 56 (`smallvec`'s `SmallVec<[T; 1]>` keeps its capacity beside
//! the item, a word more each).

use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

use thin_vec::ThinVec;

/// A list of `T`, its one item held in place. Compared, hashed and shown as the slice it holds,
/// whichever way it is held.
#[derive(Clone)]
pub enum OneOrList<T> {
    /// Exactly one item.
    One(T),
    /// None, or more than one.
    List(ThinVec<T>),
}

impl<T> OneOrList<T> {
    /// The items in order.
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrList::One(item) => std::slice::from_ref(item),
            OneOrList::List(items) => items,
        }
    }

    /// The items in order, to be changed in place.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            OneOrList::One(item) => std::slice::from_mut(item),
            OneOrList::List(items) => items,
        }
    }

    /// Appends `item`: to an empty list without room it is the one item; a list of one becomes
    /// a `ThinVec` of two, sized for just them; a list made with room for several
    /// ([`Self::with_capacity`]) fills its room, as read lists of two or more are built.
    pub fn push(&mut self, item: T) {
        match self {
            OneOrList::List(items) if items.capacity() == 0 => *self = OneOrList::One(item),
            OneOrList::List(items) => items.push(item),
            OneOrList::One(_) => {
                let OneOrList::One(first) = std::mem::take(self) else { unreachable!("matched One") };
                let mut items = ThinVec::with_capacity(2);
                items.push(first);
                items.push(item);
                *self = OneOrList::List(items);
            }
        }
    }

    /// An empty list with room for `len` items without growing (none is needed for one: it is
    /// held in place).
    pub fn with_capacity(len: usize) -> Self {
        OneOrList::List(if len > 1 { ThinVec::with_capacity(len) } else { ThinVec::new() })
    }
}

impl<T> Default for OneOrList<T> {
    fn default() -> Self {
        OneOrList::List(ThinVec::new())
    }
}

impl<T> Deref for OneOrList<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for OneOrList<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<'l, T> IntoIterator for &'l mut OneOrList<T> {
    type Item = &'l mut T;
    type IntoIter = std::slice::IterMut<'l, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

impl<'l, T> IntoIterator for &'l OneOrList<T> {
    type Item = &'l T;
    type IntoIter = std::slice::Iter<'l, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<T> Extend<T> for OneOrList<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

impl<T> FromIterator<T> for OneOrList<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut items = items.into_iter();
        match (items.next(), items.next()) {
            (None, _) => OneOrList::default(),
            (Some(one), None) => OneOrList::One(one),
            (Some(a), Some(b)) => OneOrList::List([a, b].into_iter().chain(items).collect()),
        }
    }
}

impl<T: PartialEq> PartialEq for OneOrList<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Eq> Eq for OneOrList<T> {}

impl<T: Hash> Hash for OneOrList<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<T: PartialOrd> PartialOrd for OneOrList<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.as_slice().partial_cmp(other.as_slice())
    }
}

impl<T: Ord> Ord for OneOrList<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl<T: serde::Serialize> serde::Serialize for OneOrList<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for OneOrList<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::OneOrList;

    fn held(list: &OneOrList<String>) -> &'static str {
        match list {
            OneOrList::One(_) => "one",
            OneOrList::List(_) => "list",
        }
    }

    #[test]
    fn one_item_is_held_in_place_and_any_other_number_in_a_list() {
        let items = |n: usize| (0..n).map(|i| format!("c{i}")).collect::<Vec<_>>();
        for n in 0..5 {
            let collected: OneOrList<String> = items(n).into_iter().collect();
            let mut pushed = OneOrList::with_capacity(n);
            for item in items(n) {
                pushed.push(item);
            }
            let mut extended = OneOrList::default();
            extended.extend(items(n));
            for list in [&collected, &pushed, &extended] {
                assert_eq!(list.as_slice(), &items(n)[..], "{n} items");
                assert_eq!(held(list), if n == 1 { "one" } else { "list" }, "{n} items");
                assert_eq!(format!("{list:?}"), format!("{:?}", items(n)));
            }
            // A list made with room for its items fills it: no allocation is dropped or grown.
            if let OneOrList::List(v) = &pushed {
                assert_eq!(v.capacity(), if n > 1 { n } else { 0 }, "{n} items");
            }
        }
    }

    #[test]
    fn lists_compare_and_hash_as_their_items_however_held() {
        use std::hash::BuildHasher;
        let one = OneOrList::One("a".to_string());
        let listed = OneOrList::List(thin_vec::thin_vec!["a".to_string()]);
        assert_eq!(one, listed);
        let hasher = std::hash::RandomState::new();
        assert_eq!(hasher.hash_one(&one), hasher.hash_one(&listed));
        assert_eq!(hasher.hash_one(&one), hasher.hash_one(["a".to_string()].as_slice()));
        assert_ne!(one, OneOrList::default());
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn the_one_item_takes_the_place_of_the_pointer() {
        use crate::model::{NetworkFilter, Text};
        assert_eq!(std::mem::size_of::<OneOrList<Text<'_>>>(), 16);
        assert_eq!(std::mem::size_of::<OneOrList<NetworkFilter<'_>>>(), 56);
    }
}
