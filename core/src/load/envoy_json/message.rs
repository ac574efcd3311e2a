//! A message's object: each key looked up among the message's fields (both casings), each value
//! checked as its field says, and, when the object ends, PGV's rules of the fields that were not
//! given, its required oneofs and Envoy's extension lookup. An Any is read the same way once its
//! `@type` is known; a Kubernetes object is read for the CiliumEnvoyConfig resources it holds.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::texts::Leaf;
use super::value::{CheckedSeed, Shape};
use super::{Comp, Last, Mode, PgvLink, Walk};
use crate::model::problem::ProblemKind;
use crate::schema::rules::KindRules;
use crate::schema::{Card, FieldRules, MsgId, Wkt};

/// A key with where its text starts.
pub(super) type KeyAt<'de> = (Cow<'de, str>, Option<usize>);

/// A map key as written: borrowed from the text unless it had escapes.
pub(crate) struct KeyStr<'de>(pub(crate) Cow<'de, str>);

impl<'de> KeyStr<'de> {
    /// Where the key's text starts (after its quote), when it is borrowed.
    pub(crate) fn offset(&self, w: &Walk<'_>) -> Option<usize> {
        match &self.0 {
            Cow::Borrowed(k) => w.offset_of(k),
            Cow::Owned(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for KeyStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The key as the typed reader is handed it (borrowed, so that it can take its offset).
pub(super) fn hand_key<'de, K: DeserializeSeed<'de>, E: de::Error>(seed: K, key: Cow<'de, str>) -> Result<K::Value, E> {
    match key {
        Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::<E>::new(k)),
        Cow::Owned(k) => seed.deserialize(StringDeserializer::<E>::new(k)),
    }
}

/// A value handed to a typed reader that may ask for it as an `Option`: serde's value
/// deserializers do not wrap what they give in `Some`.
struct Given<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Given<D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        v.visit_some(self.0)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The occurrences of one list (or map) field, read as the one list (or map) Envoy's parser
/// makes of them: the elements of each in turn (a single value counts as a list of one, as
/// the lenient parser takes it).
struct Joined<'de>(Vec<&'de RawValue>);

impl<'de> Deserializer<'de> for Joined<'de> {
    type Error = serde_json::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, serde_json::Error> {
        match self.join()? {
            Ok(entries) => v.visit_map(JoinedMap { entries: entries.into_iter(), value: None }),
            Err(items) => v.visit_seq(JoinedSeq(items.into_iter())),
        }
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, serde_json::Error> {
        v.visit_some(self)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> Joined<'de> {
    /// The joined map's entries (`Ok`), or the joined list's items (`Err`).
    #[allow(clippy::type_complexity)]
    fn join(self) -> Result<Result<Vec<(KeyStr<'de>, &'de RawValue)>, Vec<&'de RawValue>>, serde_json::Error> {
        let first = self.0.first().map(|r| r.get().trim_start().as_bytes().first().copied());
        if first == Some(Some(b'{')) {
            // Maps: a key of a later occurrence replaces the same key of an earlier one (a key
            // repeated inside one object is another matter, which the map reader refuses).
            let parts: Vec<Vec<(KeyStr<'de>, &'de RawValue)>> =
                self.0.iter().map(|p| parse_entries(p.get())).collect::<Result<_, _>>()?;
            let mut last_part: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
            for (n, part) in parts.iter().enumerate() {
                for (k, _) in part {
                    last_part.insert(&k.0, n);
                }
            }
            let mut entries = Vec::new();
            for (n, part) in parts.iter().enumerate() {
                for (k, raw) in part {
                    if last_part.get(&*k.0) == Some(&n) {
                        entries.push((KeyStr(k.0.clone()), *raw));
                    }
                }
            }
            Ok(Ok(entries))
        } else {
            let mut items = Vec::new();
            for part in self.0 {
                if part.get().trim_start().starts_with('[') {
                    items.extend(serde_json::from_str::<Vec<&'de RawValue>>(part.get())?);
                } else {
                    items.push(part);
                }
            }
            Ok(Err(items))
        }
    }
}

/// An object's entries in order, values unread (duplicates kept: a map is a list of entries).
fn parse_entries<'de>(text: &'de str) -> Result<Vec<(KeyStr<'de>, &'de RawValue)>, serde_json::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(KeyStr<'de>, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
            let mut out = Vec::new();
            while let Some(k) = m.next_key::<KeyStr<'de>>()? {
                out.push((k, m.next_value::<&'de RawValue>()?));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Entries)
}

struct JoinedSeq<'de>(std::vec::IntoIter<&'de RawValue>);

impl<'de> de::SeqAccess<'de> for JoinedSeq<'de> {
    type Error = serde_json::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, serde_json::Error> {
        match self.0.next() {
            Some(raw) => seed.deserialize(&mut serde_json::Deserializer::from_str(raw.get())).map(Some),
            None => Ok(None),
        }
    }
}

struct JoinedMap<'de> {
    entries: std::vec::IntoIter<(KeyStr<'de>, &'de RawValue)>,
    value: Option<&'de RawValue>,
}

impl<'de> MapAccess<'de> for JoinedMap<'de> {
    type Error = serde_json::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, serde_json::Error> {
        match self.entries.next() {
            Some((k, v)) => {
                self.value = Some(v);
                hand_key(seed, k.0).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, serde_json::Error> {
        let raw = self.value.take().ok_or_else(|| de::Error::custom("a value without its key"))?;
        seed.deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
    }
}

/// A string value as a typed reader is handed it.
fn hand_value<'de, S: DeserializeSeed<'de>, E: de::Error>(seed: S, value: Cow<'de, str>) -> Result<S::Value, E> {
    match value {
        Cow::Borrowed(v) => seed.deserialize(Given(BorrowedStrDeserializer::<E>::new(v))),
        Cow::Owned(v) => seed.deserialize(Given(StringDeserializer::<E>::new(v))),
    }
}

/// An entry read ahead of its turn: its key, the key's offset, the value's raw text.
type Ahead<'de> = (Cow<'de, str>, Option<usize>, Val<'de>);

/// The raw text of an entry's value: one, or the occurrences of a list or map field given more
/// than once, which Envoy's parser joins in order.
#[derive(Clone)]
enum Val<'de> {
    One(&'de RawValue),
    Joined(Vec<&'de RawValue>),
}

/// Where an object's entries come from: the object itself, with some read ahead (an Any's
/// fields before its `@type`) or put off (a TypedStruct's `value` before its `type_url`).
struct Source<'de, A> {
    inner: A,
    inner_done: bool,
    /// Where the object's first key is in the text, once read: which object this is.
    first: Option<Option<usize>>,
    /// What was read ahead or put off; boxed, and made only when needed: every object's reader
    /// is moved a few times on its way to the typed reader, and few objects need this.
    spill: Option<Box<Spill<'de>>>,
}

/// The entries of an object read out of their turn.
#[derive(Default)]
struct Spill<'de> {
    ahead: VecDeque<Ahead<'de>>,
    later: VecDeque<Ahead<'de>>,
    /// The raw value of the entry whose key was just given out, if it was read ahead.
    pending: Option<Val<'de>>,
    /// The object's first key, read to tell which object this is; its value is still unread.
    peeked: Option<KeyAt<'de>>,
}

impl<'de, A: MapAccess<'de>> Source<'de, A> {
    fn new(inner: A) -> Self {
        Source { inner, inner_done: false, first: None, spill: None }
    }

    fn spill(&mut self) -> &mut Spill<'de> {
        self.spill.get_or_insert_with(Box::default)
    }

    /// The entries read ahead (none when nothing was).
    fn ahead(&self) -> impl Iterator<Item = &Ahead<'de>> {
        self.spill.iter().flat_map(|s| s.ahead.iter())
    }

    fn take_pending(&mut self) -> Option<Val<'de>> {
        self.spill.as_mut().and_then(|s| s.pending.take())
    }

    fn next_key(&mut self, w: &Walk<'de>) -> Result<Option<KeyAt<'de>>, A::Error> {
        if let Some(s) = &mut self.spill {
            if let Some(peeked) = s.peeked.take() {
                return Ok(Some(peeked));
            }
            if let Some((k, o, raw)) = s.ahead.pop_front() {
                s.pending = Some(raw);
                return Ok(Some((k, o)));
            }
        }
        if !self.inner_done {
            match self.inner.next_key::<KeyStr<'de>>()? {
                Some(k) => {
                    let o = k.offset(w);
                    self.first.get_or_insert(o);
                    return Ok(Some((k.0, o)));
                }
                None => self.inner_done = true,
            }
        }
        if let Some(s) = &mut self.spill
            && let Some((k, o, raw)) = s.later.pop_front()
        {
            s.pending = Some(raw);
            return Ok(Some((k, o)));
        }
        Ok(None)
    }

    /// The next key of the object itself, not of what was read ahead.
    fn inner_key(&mut self, w: &Walk<'de>) -> Result<Option<KeyAt<'de>>, A::Error> {
        if let Some(peeked) = self.spill.as_mut().and_then(|s| s.peeked.take()) {
            return Ok(Some(peeked));
        }
        if self.inner_done {
            return Ok(None);
        }
        match self.inner.next_key::<KeyStr<'de>>()? {
            Some(k) => {
                let o = k.offset(w);
                self.first.get_or_insert(o);
                Ok(Some((k.0, o)))
            }
            None => {
                self.inner_done = true;
                Ok(None)
            }
        }
    }

    fn raw_value(&mut self) -> Result<Val<'de>, A::Error> {
        match self.take_pending() {
            Some(raw) => Ok(raw),
            None => self.inner.next_value::<&'de RawValue>().map(Val::One),
        }
    }

    fn value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match self.take_pending() {
            Some(Val::One(raw)) => {
                let mut de = serde_json::Deserializer::from_str(raw.get());
                seed.deserialize(&mut de).map_err(de::Error::custom)
            }
            Some(Val::Joined(parts)) => seed.deserialize(Joined(parts)).map_err(de::Error::custom),
            None => self.inner.next_value_seed(seed),
        }
    }

    /// Reads the object's first key, kept to be given out first, for where it is.
    fn peek(&mut self, w: &Walk<'de>) -> Result<Option<usize>, A::Error> {
        if let Some(peeked) = self.inner_key(w)? {
            self.spill().peeked = Some(peeked);
        }
        Ok(self.first.flatten())
    }

    /// Reads the rest of the object ahead (a [`Walk::merging`] reading).
    fn drain(&mut self, w: &Walk<'de>) -> Result<(), A::Error> {
        while let Some((k, o)) = self.inner_key(w)? {
            let raw = self.inner.next_value::<&'de RawValue>()?;
            self.spill().ahead.push_back((k, o, Val::One(raw)));
        }
        Ok(())
    }

    fn skip_value(&mut self) -> Result<(), A::Error> {
        match self.take_pending() {
            Some(_) => Ok(()),
            None => self.inner.next_value::<IgnoredAny>().map(drop),
        }
    }
}

/// What kind of object a [`MessageMap`] reads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ObjKind {
    /// A message of the schema.
    Message(MsgId),
    /// A `google.protobuf.Any`: its fields are the message its `@type` names. `rules` and `at`
    /// are the Any field's own.
    Any { rules: Option<&'static FieldRules>, at: u16 },
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// The fields of a message.
    Fields(MsgId),
    /// An Any whose `@type` is still to be found.
    AnyStart {
        rules: Option<&'static FieldRules>,
        at: u16,
    },
    /// An Any's `@type`, given to the typed reader; its fields follow (as `.0`, or unchecked).
    AnyType(Option<MsgId>),
    /// An Any's payload of a well-known type: only `value` may follow.
    AnyWkt(MsgId),
    /// What is not checked (an Any of a type the schema lacks).
    Free,
    Done,
}

/// Which field's value comes next.
struct Pending<'de> {
    field: u16,
    key: Cow<'de, str>,
    offset: Option<usize>,
}

/// What an extension's wrapper (`Filter`, `TransportSocket`, `TypedExtensionConfig`...) has
/// given, for Envoy's lookup of its factory.
#[derive(Default)]
struct Extension<'de> {
    name: Option<Cow<'de, str>>,
    /// The typed config's type: `None` when not given, `Some(None)` when it has none of the
    /// schema's (or was refused).
    typed: Option<Option<MsgId>>,
    /// Another member of the typed config's oneof is set (`config_discovery`).
    elsewhere: bool,
    optional: bool,
}

/// A message's object as the typed reader reads it.
pub(crate) struct MessageMap<'w, 'de, A> {
    src: Source<'de, A>,
    w: &'w Walk<'de>,
    phase: Phase,
    /// The Any's payload: its `<any>` component was pushed and is popped when it ends.
    payload: bool,
    seen: [u64; 4],
    /// The groups of [`crate::schema::Message::envoy_requires`] of which a field is given and
    /// not empty, one bit each.
    required_given: u8,
    oneofs: u64,
    /// Oneofs a refused value was given for.
    refused_oneofs: u64,
    pending: Option<Pending<'de>>,
    /// The `@type` of an Any, handed to the typed reader as its first field, and its key as
    /// written (the typed reader takes the object's place from it).
    type_url: Option<Cow<'de, str>>,
    type_key: Cow<'de, str>,
    ext: Extension<'de>,
    /// A TypedStruct's `type_url`, once read.
    typed_struct: Option<Cow<'de, str>>,
    /// The message's own place, for problems found when it ends.
    start: Option<usize>,
    /// Whether a merging reading has asked whether this is an object to join.
    asked: bool,
    /// It was read ahead whole; its repeated fields are joined once its message is known.
    merged: bool,
    joined: bool,
}

impl<'w, 'de, A: MapAccess<'de>> MessageMap<'w, 'de, A> {
    pub(crate) fn new(inner: A, w: &'w Walk<'de>, kind: ObjKind) -> Self {
        let phase = match kind {
            ObjKind::Message(m) => Phase::Fields(m),
            ObjKind::Any { rules, at } => Phase::AnyStart { rules, at },
        };
        MessageMap {
            src: Source::new(inner),
            w,
            phase,
            payload: false,
            seen: [0; 4],
            required_given: 0,
            oneofs: 0,
            refused_oneofs: 0,
            pending: None,
            type_url: None,
            type_key: Cow::Borrowed("@type"),
            ext: Extension::default(),
            typed_struct: None,
            start: w.value_offset(),
            asked: false,
            merged: false,
            joined: false,
        }
    }

    fn is_seen(&self, i: u16) -> bool {
        let i = usize::from(i);
        i < 256 && self.seen[i / 64] & (1 << (i % 64)) != 0
    }

    fn set_seen(&mut self, i: u16, on: bool) {
        let i = usize::from(i);
        if i < 256 {
            if on {
                self.seen[i / 64] |= 1 << (i % 64);
            } else {
                self.seen[i / 64] &= !(1 << (i % 64));
            }
        }
    }

    /// Looks for an Any's `@type`, reading the keys before it ahead.
    fn find_type(&mut self, rules: Option<&'static FieldRules>, at: u16) -> Result<(), A::Error> {
        let w = self.w;
        if self.merged {
            // The object was read ahead whole: `@type` is among its entries, or nowhere.
            let Some(p) = self.src.ahead().position(|(k, _, _)| k == "@type") else {
                self.no_type();
                return Ok(());
            };
            let Some((k, o, Val::One(raw))) = self.src.spill().ahead.remove(p) else {
                return Err(de::Error::custom("a joined @type"));
            };
            let url = serde_json::from_str::<Option<KeyStr<'de>>>(raw.get()).map_err(de::Error::custom)?;
            self.type_found(k, o, url.map(|k| k.0), rules, at);
            return Ok(());
        }
        loop {
            match self.src.inner_key(w)? {
                None => {
                    self.no_type();
                    return Ok(());
                }
                Some((k, o)) if k == "@type" => {
                    let url = self.src.inner.next_value::<Option<KeyStr<'de>>>()?.map(|k| k.0);
                    self.type_found(k, o, url, rules, at);
                    return Ok(());
                }
                Some((k, o)) => {
                    let raw = self.src.inner.next_value::<&'de RawValue>()?;
                    self.src.spill().ahead.push_back((k, o, Val::One(raw)));
                }
            }
        }
    }

    /// The Any has no `@type`.
    fn no_type(&mut self) {
        let w = self.w;
        if self.src.ahead().next().is_some() {
            w.invalid("in legacy mode, missing @type in Any is only allowed for an empty object", self.start);
            self.phase = Phase::Free;
        } else {
            self.phase = Phase::Done;
        }
        w.push_any(None);
    }

    /// The Any's `@type` (`None`: it is `null`), at key `k`.
    fn type_found(
        &mut self,
        k: Cow<'de, str>,
        o: Option<usize>,
        url: Option<Cow<'de, str>>,
        rules: Option<&'static FieldRules>,
        at: u16,
    ) {
        let w = self.w;
        let Some(url) = url else {
            w.with_key(k.clone(), o, || w.invalid("unexpected character: 'n'; expected '\"'", o));
            self.phase = Phase::Free;
            w.push_any(None);
            return;
        };
        if let Some(FieldRules { kind: Some(KindRules::Any(r)), .. }) = rules
            && let Some(reason) = r.check(&url)
        {
            w.constraint_at(at, None, &reason, o);
        }
        let resolved = w.schema.find_type_url(&url);
        match resolved {
            Some(m) => {
                w.push_comp(Comp::any(&w.schema.message(m).full_name));
                self.payload = true;
                w.push_any(Some(m));
            }
            None => {
                let offset = match &url {
                    Cow::Borrowed(u) => w.offset_of(u).map(|x| x.saturating_sub(1)),
                    Cow::Owned(_) => o,
                };
                w.with_key(k.clone(), o, || w.unknown_type(&url, offset));
                w.push_any(None);
            }
        }
        self.type_url = Some(url);
        self.type_key = k;
        self.phase = Phase::AnyType(resolved);
    }

    /// Reads the whole object ahead, for a reading that joins its repeated fields. YAML first
    /// keeps the last of each key and sorts the keys, as Envoy's trip through `Struct` does.
    fn read_all_ahead(&mut self) -> Result<(), A::Error> {
        let w = self.w;
        self.src.drain(w)?;
        self.merged = true;
        if !w.yaml {
            return Ok(());
        }
        let entries: Vec<Ahead<'de>> = self.src.spill().ahead.drain(..).collect();
        let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (n, (k, _, _)) in entries.iter().enumerate() {
            last.insert(k, n);
        }
        for (n, (k, o, _)) in entries.iter().enumerate() {
            let kept = last[&**k];
            if kept != n {
                let msg = format!("`{k}` is given again later in this mapping: Envoy keeps the last one");
                w.with_key(k.clone(), *o, || {
                    w.problem(ProblemKind::RepeatedField, msg, None, o.map(|x| x.saturating_sub(1)))
                });
                if let Some(at) = entries[kept].1 {
                    w.related("the one Envoy keeps".to_owned(), at.saturating_sub(1));
                }
            }
        }
        let keep: Vec<usize> = {
            let mut v: Vec<usize> = last.values().copied().collect();
            v.sort_unstable();
            v
        };
        let mut kept: Vec<Ahead<'de>> = Vec::with_capacity(keep.len());
        let mut entries: Vec<Option<Ahead<'de>>> = entries.into_iter().map(Some).collect();
        for n in keep {
            kept.extend(entries[n].take());
        }
        kept.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        self.src.spill().ahead = kept.into();
        Ok(())
    }

    /// Joins the occurrences of each field given more than once, as Envoy's parser does: of a
    /// list or a map all of them in order, of anything else the last, in the first's place.
    fn join_repeated(&mut self, m: MsgId) {
        let w = self.w;
        let message = w.schema.message(m);
        let entries: Vec<Ahead<'de>> = self.src.spill().ahead.drain(..).collect();
        let mut places: Vec<(u16, Vec<usize>)> = Vec::new();
        for (n, (k, _, _)) in entries.iter().enumerate() {
            if let Some((i, _)) = message.field_by_key(k) {
                match places.iter_mut().find(|(f, _)| *f == i) {
                    Some((_, at)) => at.push(n),
                    None => places.push((i, vec![n])),
                }
            }
        }
        let mut entries: Vec<Option<Ahead<'de>>> = entries.into_iter().map(Some).collect();
        for (i, at) in places.into_iter().filter(|(_, at)| at.len() > 1) {
            let f = message.field(i);
            let occurrences: Vec<Ahead<'de>> = at.iter().filter_map(|&n| entries[n].take()).collect();
            let is_map = matches!(f.card, Card::Map(_));
            let first_offset = occurrences[0].1;
            let last_offset = occurrences[occurrences.len() - 1].1;
            let joined = matches!(f.card, Card::Repeated | Card::Map(_));
            for (n, (k, o, _)) in occurrences.iter().enumerate() {
                let (msg, other) = if joined && n > 0 {
                    let what = if is_map {
                        "its entries to those given first (a key given again replaces the earlier one)"
                    } else {
                        "its items to those given first"
                    };
                    (format!("`{k}` is given again in this object: Envoy adds {what}"), first_offset)
                } else if !joined && n + 1 < occurrences.len() {
                    (format!("`{k}` is given again later in this object: Envoy keeps the last one"), last_offset)
                } else {
                    continue;
                };
                w.with_key(k.clone(), *o, || {
                    w.problem(ProblemKind::RepeatedField, msg, None, o.map(|x| x.saturating_sub(1)))
                });
                if let Some(at) = other {
                    let what = if joined { "where the list starts" } else { "the one Envoy keeps" };
                    w.related(what.to_owned(), at.saturating_sub(1));
                }
            }
            let entry = if joined {
                let mut parts = Vec::new();
                let mut first = None;
                for (k, o, v) in occurrences {
                    first.get_or_insert((k, o));
                    match v {
                        Val::One(r) => parts.push(r),
                        Val::Joined(p) => parts.extend(p),
                    }
                }
                let (k, o) = first.expect("two occurrences or more");
                (k, o, Val::Joined(parts))
            } else {
                occurrences.into_iter().next_back().expect("two occurrences or more")
            };
            entries[at[0]] = Some(entry);
        }
        self.src.spill().ahead = entries.into_iter().flatten().collect();
    }

    /// The object ended: PGV's rules of what was not given, required oneofs, the extension.
    fn finish(&mut self, m: MsgId) {
        let w = self.w;
        let message = w.schema.message(m);
        if w.mode() != Mode::Silent && !message.pgv_disabled {
            for &i in &message.absent_checks {
                if self.is_seen(i) {
                    continue;
                }
                let f = message.field(i);
                if let Some(reason) = f.rules.as_ref().and_then(|r| r.absent_failure(f)) {
                    let leaf = Leaf::Field { message: &message.name, field: &f.pgv_name, index: None };
                    let envoy = w.pgv_error(w.depth(), leaf, &reason);
                    w.problem_here(
                        ProblemKind::Constraint,
                        format!("{} has no `{}`: {reason}", w.describe_short(), f.name),
                        envoy,
                        self.start,
                    );
                }
            }
            for (g, group) in message.envoy_requires.iter().enumerate() {
                if self.required_given & (1 << g) != 0 {
                    continue;
                }
                let names: Vec<String> = group.fields.iter().map(|&i| format!("`{}`", message.field(i).name)).collect();
                let what = format!("{} has no {}", w.describe_short(), names.join(" or "));
                w.problem_here(ProblemKind::InvalidSetting, what, group.text.to_owned(), self.start);
            }
            for (o, oneof) in message.oneofs.iter().enumerate() {
                if oneof.required && (self.oneofs | self.refused_oneofs) & (1 << o) == 0 {
                    let envoy = w.pgv_error(w.depth(), Leaf::Oneof(&oneof.name), "");
                    w.problem_here(
                        ProblemKind::Constraint,
                        format!(
                            "{} sets none of the fields of `{}`, one of which is required",
                            w.describe_short(),
                            oneof.name
                        ),
                        envoy,
                        self.start,
                    );
                }
            }
        }
        if let Some(slots) = &message.extension
            && w.mode() != Mode::Silent
            && !self.ext.optional
            // A matcher's action is not looked up in the registry (asked only of wrappers: the
            // field that holds the object is still the innermost one).
            && !w.in_unregistered_slot()
        {
            let registry = w.schema.extensions();
            let name = self.ext.name.as_deref().unwrap_or("");
            // The slot's categories: annotated on the wrapper's typed_config, or on the field
            // that holds the wrapper (a TransportSocket, a TypedExtensionConfig).
            let own: &[&str] = &message.field(slots.typed_config).categories;
            let slot: &[&str] = if own.is_empty() {
                w.parent_field().map(|(pm, pf)| &*w.schema.message(pm).field(pf).categories).unwrap_or_default()
            } else {
                own
            };
            let missing = match self.ext.typed {
                Some(None) => None,
                // A type some factory takes is looked up in the slot's categories. Otherwise
                // only a type that is no extension's config at all is known to have no factory:
                // `/server_info` lists one registry per category name, and a second registry of
                // the same name (the proactive resource monitors') is not listed: its factories
                // are found by name.
                Some(Some(t)) => {
                    let target = w.schema.message(t);
                    let cats = &target.factory_categories;
                    let refused = if let Some(only) = registry.unlisted_name(&target.full_name) {
                        name != only
                    } else if cats.is_empty() {
                        !target.full_name.starts_with("envoy.extensions.")
                    } else {
                        !slot.is_empty() && !cats.iter().any(|c| slot.contains(c))
                    };
                    refused.then_some(&*target.full_name)
                }
                None => (!self.ext.elsewhere && !slots.typed_config_required).then_some(""),
            };
            if let Some(t) = missing {
                let envoy = format!("Didn't find a registered implementation for '{name}' with type URL: '{t}'");
                let elsewhere = registry.categories_of(t);
                let what = if let Some(only) = registry.unlisted_name(t) {
                    format!(
                        "{} `{name}`: Envoy 1.40 finds the factory of `{t}` by the name `{only}` only",
                        w.describe_short()
                    )
                } else if t.is_empty() {
                    format!(
                        "{} `{name}` has no typed_config: Envoy 1.40 finds extensions by their config's type",
                        w.describe_short()
                    )
                } else if !elsewhere.is_empty() {
                    format!(
                        "{} `{name}`: `{t}` configures {} extensions, and this place takes {}",
                        w.describe_short(),
                        elsewhere.join(", "),
                        slot.join(" or ")
                    )
                } else {
                    format!("{} `{name}`: Envoy 1.40 has no extension that takes `{t}`", w.describe_short())
                };
                w.problem_here(ProblemKind::UnknownExtension, what, envoy, self.start);
            }
        }
        if message.wkt == Wkt::TypedStruct
            && let Some(url) = &self.typed_struct
        {
            w.set_typed_struct_target(w.schema.find_type_url(url));
        }
        if self.payload {
            w.pop_comp();
            self.payload = false;
        }
        self.phase = Phase::Done;
    }

    /// A key the message has no field for.
    fn unknown(&self, m: MsgId, key: Cow<'de, str>, offset: Option<usize>) {
        let w = self.w;
        w.with_key(key.clone(), offset, || w.unknown_field(&key, offset.map(|o| o.saturating_sub(1))));
        let message = w.schema.message(m);
        let best = message
            .fields
            .iter()
            .map(|f| (strsim::jaro_winkler(&f.name, &key.to_ascii_lowercase()), &f.name))
            .filter(|(s, _)| *s > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, name)) = best {
            w.note(format!("did you mean `{name}`?"));
        }
    }
}

impl<'w, 'de, A: MapAccess<'de>> MapAccess<'de> for MessageMap<'w, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        let w = self.w;
        if !self.asked {
            self.asked = true;
            if w.is_merging() {
                let first = self.src.peek(w)?;
                if w.merges(first) {
                    self.read_all_ahead()?;
                }
            }
        }
        loop {
            let (m, wkt_payload) = match self.phase {
                Phase::Done => return Ok(None),
                Phase::AnyStart { rules, at } => {
                    self.find_type(rules, at)?;
                    continue;
                }
                Phase::AnyType(_) => {
                    // The typed reader sees `@type` first, as Envoy writes it.
                    return hand_key(seed, self.type_key.clone()).map(Some);
                }
                Phase::Free => match self.src.next_key(w)? {
                    Some((k, _)) => {
                        self.pending = None;
                        return hand_key(seed, k).map(Some);
                    }
                    None => {
                        self.phase = Phase::Done;
                        return Ok(None);
                    }
                },
                Phase::AnyWkt(m) => (m, true),
                Phase::Fields(m) => {
                    if self.merged && !self.joined {
                        self.joined = true;
                        self.join_repeated(m);
                    }
                    (m, false)
                }
            };
            let Some((key, offset)) = self.src.next_key(w)? else {
                self.finish(m);
                return Ok(None);
            };
            if self.payload && key == "@type" {
                w.with_key(key.clone(), offset, || w.invalid("repeated @type in Any", offset));
                self.src.skip_value()?;
                continue;
            }
            if wkt_payload {
                if key != "value" {
                    w.invalid("fields in a well-known-typed Any must be @type or value", offset);
                    self.src.skip_value()?;
                    continue;
                }
                self.pending = Some(Pending { field: u16::MAX, key: key.clone(), offset });
                return hand_key(seed, key).map(Some);
            }
            let message = w.schema.message(m);
            let Some((i, f)) = message.field_by_key(&key) else {
                self.unknown(m, key, offset);
                self.src.skip_value()?;
                continue;
            };
            if self.is_seen(i) {
                // The field again: Envoy keeps the last value or joins the lists. The first
                // value stays here; the text is read again joining this object's fields.
                w.found_repeated(self.src.first.flatten());
                self.src.skip_value()?;
                continue;
            }
            if message.wkt == Wkt::TypedStruct && f.number == 2 && self.typed_struct.is_none() && !self.src.inner_done {
                // The struct is read as its `type_url`'s message: wait for the type.
                let raw = self.src.raw_value()?;
                self.src.spill().later.push_back((key, offset, raw));
                continue;
            }
            if let Some(o) = f.oneof {
                if self.oneofs & (1 << o) != 0 && !self.is_seen(i) {
                    let comp = Comp::field(key.clone(), m, i);
                    w.with_key_comp(key.clone(), offset, comp, || {
                        w.invalid(
                            &format!("'{key}' has already been set (either directly or as part of a oneof)"),
                            offset,
                        )
                    });
                    self.src.skip_value()?;
                    continue;
                }
                self.oneofs |= 1 << o;
            }
            self.set_seen(i, true);
            self.pending = Some(Pending { field: i, key: key.clone(), offset });
            return hand_key(seed, key).map(Some);
        }
    }

    // The work around each value is in `plan_value` and `after_value`, which do not depend on
    // the seed: this method is instantiated once per typed reader, and only it.
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let w = self.w;
        let (shape, mode, root, after) = match self.plan_value() {
            Ok(Plan::Url(url)) => return hand_value(seed, url),
            Ok(Plan::Read { shape, mode, root, after }) => (shape, mode, root, after),
            Err(m) => return Err(de::Error::custom(m)),
        };
        if let Some(t) = root {
            w.push_root(t);
        }
        let r = match mode {
            Some(mode) => {
                let before = w.swap_mode(mode);
                let r = self.src.value_seed(CheckedSeed { seed, shape, w });
                w.swap_mode(before);
                r
            }
            None => self.src.value_seed(CheckedSeed { seed, shape, w }),
        };
        w.note_failure(r.is_err());
        if root.is_some() {
            w.pop_root();
        }
        self.after_value(after);
        r
    }
}

/// What reading the next value of a message's object takes.
enum Plan<'de> {
    /// An Any's `@type`, handed on as it is.
    Url(Cow<'de, str>),
    /// A value of `shape`, read in `mode` when given, as the parse root `root` when given.
    Read { shape: Shape, mode: Option<Mode>, root: Option<MsgId>, after: After },
}

/// What follows the value.
enum After {
    Nothing,
    /// The value of an Any of a well-known type.
    Wkt,
    /// The value of a field of the message: the field stays the map's `pending` while its
    /// value is read, and is taken after (not moved out and back with each value's plan).
    Field(MsgId),
}

impl<'w, 'de, A: MapAccess<'de>> MessageMap<'w, 'de, A> {
    fn plan_value(&mut self) -> Result<Plan<'de>, &'static str> {
        let w = self.w;
        match self.phase {
            Phase::AnyType(resolved) => {
                let url = self.type_url.clone().unwrap_or_default();
                self.phase = match resolved {
                    // A TypedStruct is an ordinary message in an Any (`type_url`, `value`): only
                    // the well-known types take the `{"@type", "value"}` form.
                    Some(m) if !matches!(w.schema.message(m).wkt, Wkt::None | Wkt::TypedStruct) => Phase::AnyWkt(m),
                    Some(m) => Phase::Fields(m),
                    None => Phase::Free,
                };
                return Ok(Plan::Url(url));
            }
            Phase::Free => return Ok(Plan::Read { shape: Shape::Free, mode: None, root: None, after: After::Nothing }),
            _ => {}
        }
        if let Phase::AnyWkt(m) = self.phase {
            let p = self.pending.take().ok_or("a value without its key")?;
            // `{"@type": "...Duration", "value": "1s"}`: the value is the well-known type itself.
            w.enter_key(p.key, p.offset, None);
            return Ok(Plan::Read { shape: Shape::message(m, w), mode: None, root: None, after: After::Wkt });
        }
        let Phase::Fields(m) = self.phase else {
            return Err("no field");
        };
        let p = self.pending.as_ref().ok_or("a value without its key")?;
        let message = w.schema.message(m);
        let f = message.field(p.field);
        let comp = Comp::field(p.key.clone(), m, p.field);
        w.enter_field(p.key.clone(), p.offset, comp, m, p.field);
        let field = Shape::Field(m, p.field);
        let (shape, mode, root) = if f.recorded {
            (field, Some(Mode::Silent), None)
        } else if message.wkt == Wkt::TypedStruct && f.number == 2 {
            match self.typed_struct.as_deref().and_then(|u| w.schema.find_type_url(u)) {
                Some(t) => (Shape::message(t, w), None, Some(t)),
                None => (field, None, None),
            }
        } else {
            (field, None, None)
        };
        Ok(Plan::Read { shape, mode, root, after: After::Field(m) })
    }

    fn after_value(&mut self, after: After) {
        let w = self.w;
        let m = match after {
            After::Nothing => return,
            After::Wkt => {
                w.leave_key(false);
                w.take_last();
                return;
            }
            After::Field(m) => m,
        };
        let last = w.leave_field();
        // Set by `next_key_seed` with the key, kept while the value was read.
        let Some(p) = self.pending.take() else { return };
        let message = w.schema.message(m);
        let f = message.field(p.field);
        if last.set && !last.empty {
            for (g, group) in message.envoy_requires.iter().enumerate() {
                if group.fields.contains(&p.field) {
                    self.required_given |= 1 << g;
                }
            }
        }
        if !last.set {
            // `null` leaves the field unset: PGV sees it absent, another oneof member may follow.
            // A refused value counts as given for PGV (Envoy never got to validate it), and
            // does not hold its oneof either: each later member is read for its own findings.
            if !last.refused {
                self.set_seen(p.field, false);
            }
            if let Some(o) = f.oneof {
                self.oneofs &= !(1 << o);
                if last.refused {
                    self.refused_oneofs |= 1 << o;
                }
            }
        }
        if let Some(slots) = &message.extension {
            if p.field == slots.name {
                self.ext.name = last.string.clone();
            } else if p.field == slots.typed_config {
                // A refused typed_config is its own finding: no registry lookup follows it.
                self.ext.typed = if last.set || last.refused { Some(last.any_type.flatten()) } else { None };
            } else if Some(p.field) == slots.optional && last.boolean == Some(true) {
                self.ext.optional = true;
            } else if last.set && f.oneof.is_some() && f.oneof == message.field(slots.typed_config).oneof {
                self.ext.elsewhere = true;
            }
        }
        if message.wkt == Wkt::TypedStruct && f.number == 1 {
            self.typed_struct = last.string.clone();
            if let Some(url) = &last.string
                && w.schema.find_type_url(url).is_none()
                && !url.is_empty()
            {
                w.with_key(p.key, p.offset, || w.not_validated(url, p.offset));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes objects: only a CiliumEnvoyConfig's `spec.resources` are Envoy configuration.

/// A Kubernetes object: `kind`, and the `spec.resources` of a CiliumEnvoyConfig; a `kind: List`'s
/// `items`. Everything else passes unchecked.
pub(crate) struct K8sMap<'w, 'de, A> {
    src: Source<'de, A>,
    w: &'w Walk<'de>,
    kind: Option<Cow<'de, str>>,
    pending: Option<(Cow<'de, str>, Option<usize>)>,
    /// The shape of the value being read.
    value_shape: Shape,
}

impl<'w, 'de, A: MapAccess<'de>> K8sMap<'w, 'de, A> {
    pub(crate) fn new(inner: A, w: &'w Walk<'de>) -> Self {
        K8sMap { src: Source::new(inner), w, kind: None, pending: None, value_shape: Shape::Free }
    }

    fn spec_shape(&self) -> Shape {
        match self.kind.as_deref() {
            // Cilium's own golden files omit `kind`: a spec with resources is a CEC's.
            None | Some("CiliumEnvoyConfig" | "CiliumClusterwideEnvoyConfig") => Shape::CecSpec,
            _ => Shape::Free,
        }
    }
}

impl<'w, 'de, A: MapAccess<'de>> MapAccess<'de> for K8sMap<'w, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some((key, offset)) = self.src.next_key(self.w)? else { return Ok(None) };
            // A Kubernetes object's other fields (a Kustomization's `resources`, a ConfigMap's
            // `data`) are no Envoy configuration, whatever their names: the typed reader, which
            // reads Envoy's too, is not handed them.
            if !super::document::K8S_KEYS.contains(&&*key) {
                self.src.skip_value()?;
                continue;
            }
            if key == "spec" && self.kind.is_none() && !self.src.inner_done {
                // Which kind of object this is may come after its spec.
                let raw = self.src.raw_value()?;
                self.src.spill().later.push_back((key, offset, raw));
                continue;
            }
            self.pending = Some((key.clone(), offset));
            return hand_key(seed, key).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let w = self.w;
        let r = match self.plan_value()? {
            Some(kind) => hand_value(seed, kind),
            None => {
                let shape = self.value_shape;
                self.src.value_seed(CheckedSeed { seed, shape, w })
            }
        };
        w.note_failure(r.is_err());
        w.leave_key(false);
        w.take_last();
        r
    }
}

impl<'w, 'de, A: MapAccess<'de>> K8sMap<'w, 'de, A> {
    /// Enters the pending key; for `kind`, reads it and returns it (the typed reader gets it as
    /// a string), else sets the shape of the value.
    fn plan_value(&mut self) -> Result<Option<Cow<'de, str>>, A::Error> {
        let (key, offset) = self.pending.take().unwrap_or((Cow::Borrowed(""), None));
        self.value_shape = match &*key {
            "spec" => self.spec_shape(),
            "items" => Shape::K8sItems,
            _ => Shape::Free,
        };
        self.w.enter_key(key.clone(), offset, None);
        if key != "kind" {
            return Ok(None);
        }
        let Val::One(raw) = self.src.raw_value()? else {
            return Err(de::Error::custom("a joined kind"));
        };
        self.kind = serde_json::from_str::<Option<Cow<'de, str>>>(raw.get()).ok().flatten();
        Ok(Some(self.kind.clone().unwrap_or_default()))
    }
}

/// A CiliumEnvoyConfig's `spec`: its `resources` are xDS resources the agent decodes strictly.
pub(crate) struct CecSpecMap<'w, 'de, A> {
    src: Source<'de, A>,
    w: &'w Walk<'de>,
    pending: Option<(Cow<'de, str>, Option<usize>)>,
}

impl<'w, 'de, A: MapAccess<'de>> CecSpecMap<'w, 'de, A> {
    pub(crate) fn new(inner: A, w: &'w Walk<'de>) -> Self {
        CecSpecMap { src: Source::new(inner), w, pending: None }
    }

    fn enter_value(&mut self) -> Shape {
        let (key, offset) = self.pending.take().unwrap_or((Cow::Borrowed(""), None));
        let shape = if key == "resources" { Shape::CecResources } else { Shape::Free };
        self.w.enter_key(key, offset, None);
        shape
    }
}

impl<'w, 'de, A: MapAccess<'de>> MapAccess<'de> for CecSpecMap<'w, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        let Some((key, offset)) = self.src.next_key(self.w)? else { return Ok(None) };
        self.pending = Some((key.clone(), offset));
        hand_key(seed, key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let w = self.w;
        let shape = self.enter_value();
        let r = self.src.value_seed(CheckedSeed { seed, shape, w });
        w.note_failure(r.is_err());
        w.leave_key(false);
        w.take_last();
        r
    }
}

// ---------------------------------------------------------------------------------------------
// What the message reader records, and the path components of fields.

impl<'de> Walk<'de> {
    /// Runs `f` with `key` as the last pointer token (a key that is not a field).
    pub(super) fn with_key<T>(&self, key: Cow<'de, str>, offset: Option<usize>, f: impl FnOnce() -> T) -> T {
        self.enter_key(key, offset, None);
        let out = f();
        self.leave_key(false);
        out
    }

    /// Runs `f` inside field `comp`, keyed `key`.
    pub(super) fn with_key_comp<T>(
        &self,
        key: Cow<'de, str>,
        offset: Option<usize>,
        comp: Comp<'de>,
        f: impl FnOnce() -> T,
    ) -> T {
        self.enter_key(key, offset, Some(comp));
        let out = f();
        self.leave_key(true);
        out
    }

    /// Runs `f` inside a component of Envoy's path that has no pointer token (`<struct>`).
    pub(super) fn with_comp<T>(&self, comp: Comp<'de>, f: impl FnOnce() -> T) -> T {
        self.push_comp(comp);
        let out = f();
        self.pop_comp();
        out
    }

    /// A key the message has no field for; `at` is the key's place.
    pub(super) fn unknown_field(&self, key: &str, at: Option<usize>) {
        // The key is the last pointer token; Envoy's path is the message's.
        let what = format!("{}: no field of {} is called `{key}`", self.describe_parent(), self.message_here());
        match self.mode() {
            Mode::Static => {
                let envoy = self.unknown_field_error(key);
                self.problem(ProblemKind::UnknownField, what, Some(envoy), at);
            }
            Mode::Dynamic => {
                let warning =
                    self.unknown_field_warning(&format!("invalid JSON in {}: no such field: '{key}'", self.describe()));
                self.problem(ProblemKind::IgnoredField, format!("{what}; Envoy ignores the key"), None, at);
                self.note(warning);
            }
            Mode::Cilium => self.problem(
                ProblemKind::AgentRefuses,
                format!("{what}: the Cilium agent decodes CiliumEnvoyConfig resources with Go's protojson, which refuses unknown fields"),
                None,
                at,
            ),
            Mode::Silent => {}
        }
    }

    /// An Any of a type Envoy's schema does not have: in one of Envoy's own packages it is a
    /// type no Envoy build has (a typo, a removed API), which Envoy refuses; in another package
    /// it is another proxy's extension (Cilium's `cilium.*`, Istio's `istio.*`), whose fields
    /// are not validated.
    pub(super) fn unknown_type(&self, type_url: &str, at: Option<usize>) {
        let name = type_url.rsplit('/').next().unwrap_or(type_url);
        let envoys = ["envoy.", "google.", "xds.", "udpa.", "validate."].iter().any(|p| name.starts_with(p));
        if !envoys || self.mode() == Mode::Cilium {
            return self.not_validated(type_url, at);
        }
        let envoy = Self::bare_parse_error(&format!("could not find @type '{type_url}'"));
        self.problem(
            ProblemKind::InvalidValue,
            format!("{}: `{type_url}` is not a type of Envoy 1.40's API", self.describe_parent()),
            Some(envoy),
            at,
        );
    }

    /// An Any of a type Envoy's schema does not have.
    pub(super) fn not_validated(&self, type_url: &str, at: Option<usize>) {
        self.problem(
            ProblemKind::NotValidated,
            format!(
                "{}: `{type_url}` is not a type of Envoy 1.40's API: its fields were not validated",
                self.describe_parent()
            ),
            None,
            at,
        );
        self.note(format!(
            "Envoy 1.40 itself refuses it (`{}`); a proxy built with this extension (Cilium's, Istio's) knows the type",
            Self::bare_parse_error(&format!("could not find @type '{type_url}'"))
        ));
    }

    /// A problem at the node being read, with Envoy's text.
    pub(super) fn problem_here(&self, kind: ProblemKind, message: String, envoy: String, at: Option<usize>) {
        self.problem(kind, message, Some(envoy), at);
    }

    /// The message whose field is being read.
    fn message_here(&self) -> &'static str {
        let st = self.st.borrow();
        st.comps.last().map_or("the message", |c| c.type_name(self.schema))
    }

    /// [`Self::describe_short`] of the enclosing node (the key being the last token).
    fn describe_parent(&self) -> String {
        let st = self.st.borrow();
        let n = st.ptr.len();
        drop(st);
        if n <= 1 {
            return "the document".to_owned();
        }
        let last = self.st.borrow_mut().ptr.pop();
        let out = self.describe_short();
        if let Some(t) = last {
            self.st.borrow_mut().ptr.push(t);
        }
        out
    }

    /// Whether the message being read is an extension Envoy resolves on its own rather than in
    /// its registry: a matcher's `on_match.action` is resolved by what owns the matcher (a
    /// listener's `filter_chain_matcher` names chains with a plain `StringValue`).
    pub(super) fn in_unregistered_slot(&self) -> bool {
        let st = self.st.borrow();
        matches!(
            st.comps.last().map(|c| c.pgv(self.schema)),
            Some(PgvLink::Field { message: "OnMatch", field: "Action", .. })
        )
    }

    /// Records the type an Any resolved to (`None`: none of the schema's), for the extension
    /// lookup of the message holding it.
    pub(super) fn push_any(&self, t: Option<MsgId>) {
        self.st.borrow_mut().anys.push(t);
    }

    /// An Any ended: what it held becomes the last value read (a TypedStruct stands for the
    /// message its `type_url` names).
    pub(super) fn finish_any(&self) {
        let mut st = self.st.borrow_mut();
        let t = st.anys.pop().flatten();
        let target = st.typed_struct_target.take();
        let any_type = match t {
            Some(m) if self.schema.message(m).wkt == Wkt::TypedStruct => Some(target),
            t => Some(t),
        };
        st.last = Last { set: true, any_type, ..Last::default() };
    }

    fn set_typed_struct_target(&self, t: Option<MsgId>) {
        self.st.borrow_mut().typed_struct_target = t;
    }
}
