//! Repeated fields and maps. Envoy's lenient parser flattens lists nested in a list, reads a
//! `null` element as the element's default and a single value as a list of one; PGV counts the
//! items and checks each with the list's `items` rules (a map: its pairs, keys and values).

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::message::{KeyAt, KeyStr, hand_key};
use super::scalar::Ev;
use super::texts::Leaf;
use super::value::{CheckedSeed, EmptyMap, EvDe, Shape};
use super::{Mode, PgvIndex, Walk};
use crate::hashing::InputSet;
use crate::load::raw::PartList;
use crate::model::problem::ProblemKind;
use crate::schema::rules::{KindRules, MapRules, RepeatedRules};
use crate::schema::{FieldRules, Kind, MsgId};

fn list_rules(rules: Option<&'static FieldRules>) -> Option<&'static RepeatedRules> {
    match rules.and_then(|r| r.kind.as_ref()) {
        Some(KindRules::Repeated(r)) => Some(r),
        _ => None,
    }
}

fn map_rules(rules: Option<&'static FieldRules>) -> Option<&'static MapRules> {
    match rules.and_then(|r| r.kind.as_ref()) {
        Some(KindRules::Map(r)) => Some(r),
        _ => None,
    }
}

/// What each item of a repeated field is checked as.
fn item_shape(w: &Walk<'_>, m: MsgId, i: u16, at: u16) -> Shape {
    let f = w.schema.message(m).field(i);
    let rules = list_rules(f.rules.as_deref()).and_then(|r| r.items.as_ref());
    Shape::Value { kind: f.kind, rules, at }
}

/// The default value of an item Envoy reads a `null` element as.
fn default_item(kind: Kind) -> Ev<'static> {
    match kind {
        Kind::Bool => Ev::Bool(false),
        Kind::String | Kind::Bytes => Ev::Str(Cow::Borrowed("")),
        Kind::Double | Kind::Float => Ev::F64(0.0),
        _ => Ev::U64(0),
    }
}

/// Counts the items of one repeated field and checks what PGV checks of the whole list.
struct Counter<'w, 'de> {
    w: &'w Walk<'de>,
    msg: MsgId,
    field: u16,
    /// The field's path component.
    at: u16,
    count: u64,
    unique: Option<InputSet<String>>,
    /// It counts one part of the list (see [`RepeatedSeq::split`]): the whole list's count is
    /// checked by the walk the part was forked from.
    part: bool,
}

impl<'w, 'de> Counter<'w, 'de> {
    fn new(w: &'w Walk<'de>, msg: MsgId, field: u16) -> Self {
        let f = w.schema.message(msg).field(field);
        let unique = list_rules(f.rules.as_deref()).filter(|r| r.unique).map(|_| InputSet::default());
        Counter { w, msg, field, at: w.depth().saturating_sub(1) as u16, count: 0, unique, part: false }
    }

    /// Enters the next item: Envoy's index is flattened, PGV's too.
    fn begin(&mut self, envoy_index: bool) {
        let i = self.count;
        self.w.set_index(if envoy_index { i as i64 } else { -1 }, Some(PgvIndex::Item(i)));
        self.w.capture(self.unique.is_some());
    }

    fn end(&mut self) {
        let text = self.w.take_last().text;
        if let (Some(seen), Some(t)) = (&mut self.unique, text)
            && !seen.insert(t)
        {
            self.w.constraint_at(self.at, None, "repeated value must contain unique items", self.w.value_offset());
        }
        self.w.capture(false);
        self.count += 1;
    }

    /// The list ended: PGV's item counts.
    fn finish(&self) {
        let f = self.w.schema.message(self.msg).field(self.field);
        self.w.set_index(-1, None);
        self.w.set_list_len(self.count);
        if !self.part
            && let Some(r) = list_rules(f.rules.as_deref())
            && let Some(reason) = r.check_count(self.count)
        {
            self.w.constraint_at(self.at, None, &reason, None);
        }
    }
}

/// A repeated field's list, flattened as Envoy's parser flattens nested lists.
pub(crate) struct RepeatedSeq<'w, 'de, S> {
    inner: S,
    list: List<'w, 'de>,
}

/// What a [`RepeatedSeq`] knows besides the list it reads.
struct List<'w, 'de> {
    w: &'w Walk<'de>,
    shape: Shape,
    counter: Counter<'w, 'de>,
    /// Items of nested lists, read ahead, with their pointer indices below the field.
    queue: VecDeque<(Vec<usize>, &'de RawValue)>,
    /// The index of the next element of the list itself.
    json_index: usize,
    done: bool,
}

impl<'w, 'de, S: SeqAccess<'de>> RepeatedSeq<'w, 'de, S> {
    pub(crate) fn new(inner: S, m: MsgId, i: u16, w: &'w Walk<'de>) -> Self {
        let counter = Counter::new(w, m, i);
        let shape = item_shape(w, m, i, counter.at);
        RepeatedSeq { inner, list: List { w, shape, counter, queue: VecDeque::new(), json_index: 0, done: false } }
    }
}

/// The long lists read in parts on every core ([`RepeatedSeq::split`]): a typed reader asks
/// for one by giving `deserialize_newtype_struct` its [`ListKind::name`]; it is then handed the
/// handle of the list (`visit_u128`), which the loader exchanges for what was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// A listener's `filter_chains` (one tenant listener: 400k chains).
    Chains,
    /// A bootstrap's `listeners` or a discovery response's `resources` (a listener per
    /// tenant, as Istio and Envoy Gateway render): unlike a chain, one item may hold a long
    /// list itself.
    Objects,
    /// A config_dump's `dynamic_listeners`, as `Objects`.
    DynamicListeners,
    /// A bootstrap's static `clusters` (a few per tenant, each built as it is read): read on
    /// one core after the listeners, they kept the other core idle for a sixth of a run with a
    /// route table per tenant.
    Clusters,
}

impl ListKind {
    const ALL: [ListKind; 4] = [ListKind::Chains, ListKind::Objects, ListKind::DynamicListeners, ListKind::Clusters];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            ListKind::Chains => "$xdsck::split_chains",
            ListKind::Objects => "$xdsck::split_objects",
            ListKind::DynamicListeners => "$xdsck::split_dynamic_listeners",
            ListKind::Clusters => "$xdsck::split_clusters",
        }
    }

    fn named(name: &str) -> Option<ListKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether an item may hold a long list of its own: such an item, when long, is read on
    /// the thread that finds the parts, its own lists in parts (a part's walk on a pool thread
    /// reads everything in order: it must not wait for the pool).
    fn items_hold_lists(self) -> bool {
        matches!(self, ListKind::Objects | ListKind::DynamicListeners)
    }
}

/// The size of a part of a list read in parts, and so the least list so read: below it the
/// threads do not pay; above, the parts are many enough that no core waits long for another.
/// A quarter of a megabyte: with a megabyte, the last part of a 21 MB list (10k tenants) kept
/// one core reading alone for a tenth of the load (0.94× the whole run's wall time with the
/// smaller parts, median of 9 paired runs; the same at 100k).
/// Smaller in the unit tests, so that a list of a megabyte is read in many parts.
const PART_BYTES: usize = if cfg!(test) { 1 << 16 } else { 1 << 18 };

/// Items of a list read ahead as raw texts, handed out in order.
pub(crate) struct RawItems<'r, 'de>(std::slice::Iter<'r, &'de RawValue>);

impl<'de> SeqAccess<'de> for RawItems<'_, 'de> {
    type Error = serde_json::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Self::Error> {
        let Some(raw) = self.0.next() else { return Ok(None) };
        seed.deserialize(&mut serde_json::Deserializer::from_str(raw.get())).map(Some)
    }
}

/// The items of one part of a list read in parts, as its typed reader reads them.
pub(crate) type PartItems<'r, 'w, 'de> = RepeatedSeq<'w, 'de, RawItems<'r, 'de>>;

// Only the CLI's build reads lists in parts.
#[cfg(feature = "parallel")]
impl PartItems<'_, '_, '_> {
    /// How many items are still to be read.
    pub(crate) fn items_left(&self) -> usize {
        self.inner.0.len()
    }
}

/// A part of a list handed out to be read: its items (the first's index in the list), or,
/// for an item that holds a long list of its own, what the finding thread read of it.
enum Piece<'de, R> {
    Items(usize, Vec<&'de RawValue>),
    Read(R),
}

/// Whether the list at the walk's place starts with a short item (a quarter of a part: a part
/// holds several), seen by parsing at most that much text: a list of a few long items (a
/// bootstrap whose one listener holds 400k chains) is read in order as before, each item's own
/// long lists in parts, instead of being skipped once here and again in the item's own walk.
/// (A quarter: the look at a tenant bootstrap's one listener costs 0.1% of its run, not 0.5%.)
fn first_item_short(w: &Walk<'_>) -> bool {
    let Some(rest) = w.value_text().and_then(|t| t.strip_prefix('[')) else { return false };
    let mut end = rest.len().min(PART_BYTES / 4);
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    let mut de = serde_json::Deserializer::from_str(&rest[..end]);
    <&RawValue as serde::Deserialize>::deserialize(&mut de).is_ok()
}

impl<'w, 'de, S: SeqAccess<'de>> RepeatedSeq<'w, 'de, S> {
    /// Reads the whole list in parts, one walk per part (forked from this one at the list),
    /// on every core, when the walk allows it: this thread finds the items' texts (serde_json's
    /// skipping, the cost of a bare parse) and hands out each part as soon as it has found it,
    /// to be checked and read as the list would be on another core meanwhile; the parts'
    /// problems are taken back in the list's order. The handle of what was read; `None` when
    /// the list is to be read here as usual (nothing of it has been read then).
    fn split(&mut self, kind: ListKind) -> Result<Option<usize>, S::Error> {
        let list = &mut self.list;
        let w = list.w;
        let Some(reader) = w.part_reader().filter(|_| list.json_index == 0 && list.counter.unique.is_none()) else {
            return Ok(None);
        };
        if kind.items_hold_lists() && !first_item_short(w) {
            return Ok(None);
        }
        let (msg, field) = (list.counter.msg, list.counter.field);
        let fork = w.fork();
        let read = |walk: Walk<'de>, first: usize, items: &[&'de RawValue]| {
            let _scope = crate::load::protojson::ParseScope::new(walk.text);
            let mut seq = RepeatedSeq::new(RawItems(items.iter()), msg, field, &walk);
            seq.list.json_index = first;
            seq.list.counter.count = first as u64;
            seq.list.counter.part = true;
            let part = reader(&mut seq, first, kind).map_err(|e| e.to_string());
            (part, walk.found())
        };
        let read_part = |piece: Piece<'de, _>| match piece {
            Piece::Items(first, items) => read(fork.walk(), first, &items),
            Piece::Read(done) => done,
        };
        let inner = &mut self.inner;
        let mut raws: Vec<&'de RawValue> = Vec::new();
        // A nested list's items are counted on into the list's: its parts' first indices are
        // not known before it is read. Then what was read in parts is dropped.
        let mut nested = false;
        // Where the part being found starts; 0 until the list has reached a part's size.
        let mut start = 0;
        // The list's length once the skip has found all of it (and no list in it): only then
        // are the parts' lists and problems taken.
        let whole = std::cell::Cell::new(None);
        let mut out: Option<PartList<'de>> = None;
        let mut error = None;
        let skipped = crate::parallel::pipeline(
            |hand| -> Result<(), S::Error> {
                let mut size = 0;
                // The handles the lists read in parts by the items read here will get: they
                // are kept in the list's order, after this thread has found the whole list.
                let mut handle = w.next_handle();
                loop {
                    w.push_index(raws.len());
                    let got = inner.next_element::<&'de RawValue>();
                    w.note_failure(got.is_err());
                    w.pop_index();
                    let Some(raw) = got? else { break };
                    nested |= raw.get().starts_with('[');
                    size += raw.get().len();
                    raws.push(raw);
                    if !nested && kind.items_hold_lists() && raw.get().len() >= PART_BYTES {
                        let i = raws.len() - 1;
                        if start < i {
                            hand(Piece::Items(start, raws[start..i].to_vec()));
                        }
                        let done = read(fork.splitting_walk(reader, handle), i, &raws[i..]);
                        handle += done.1.split.len();
                        hand(Piece::Read(done));
                        (start, size) = (raws.len(), 0);
                    } else if !nested && size >= PART_BYTES {
                        hand(Piece::Items(start, raws[start..].to_vec()));
                        (start, size) = (raws.len(), 0);
                    }
                }
                if !nested && start > 0 && start < raws.len() {
                    hand(Piece::Items(start, raws[start..].to_vec()));
                }
                if !nested {
                    whole.set(Some(raws.len()));
                }
                Ok(())
            },
            read_part,
            |(part, found)| {
                let Some(len) = whole.get() else { return };
                w.absorb(found);
                match (part, &mut out) {
                    (Ok(part), Some(out)) => out.extend(part),
                    // Sized once, for the whole list: no copy as it grows.
                    (Ok(part), None) => out = Some(part.with_capacity_for(len)),
                    (Err(e), _) => {
                        error.get_or_insert(e);
                    }
                }
            },
        );
        skipped?;
        list.done = true;
        if nested || start == 0 {
            let mut seq = RepeatedSeq::new(RawItems(raws.iter()), msg, field, w);
            let part = reader(&mut seq, 0, kind).map_err(de::Error::custom)?;
            return Ok(Some(w.keep_split(part)));
        }
        if let Some(e) = error {
            return Err(de::Error::custom(e));
        }
        list.counter.count = raws.len() as u64;
        list.counter.finish();
        Ok(Some(w.keep_split(out.unwrap_or_else(|| PartList::empty(kind)))))
    }
}

/// A repeated field's list as the typed reader is handed it: a sequence, which a reader that
/// asks for a [`ListKind`] may have read in parts instead.
pub(crate) struct ListDe<'a, 'w, 'de, S> {
    pub(crate) seq: &'a mut super::value::AnySeq<'w, 'de, S>,
}

impl<'a, 'w, 'de, S: SeqAccess<'de>> Deserializer<'de> for ListDe<'a, 'w, 'de, S> {
    type Error = S::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, S::Error> {
        v.visit_seq(self.seq)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> Result<V::Value, S::Error> {
        if let Some(kind) = ListKind::named(name)
            && let super::value::AnySeq::Repeated(list) = &mut *self.seq
            && let Some(handle) = list.split(kind)?
        {
            return v.visit_u128(handle as u128);
        }
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'w, 'de> List<'w, 'de> {
    fn item_kind(&self) -> Kind {
        match self.shape {
            Shape::Value { kind, .. } => kind,
            _ => Kind::Bool,
        }
    }

    /// Delivers one raw item (read ahead from a nested list) to `seed`, expanding it if it is a
    /// list itself; `None` when it was an empty list.
    fn deliver_raw<T: DeserializeSeed<'de>, E: de::Error>(
        &mut self,
        path: Vec<usize>,
        raw: &'de RawValue,
        seed: &mut Option<T>,
    ) -> Result<Option<T::Value>, E> {
        if raw.get().trim_start().starts_with('[') && self.flattens() {
            let items: Vec<&'de RawValue> = serde_json::from_str(raw.get()).map_err(de::Error::custom)?;
            for (j, item) in items.into_iter().enumerate().rev() {
                let mut p = path.clone();
                p.push(j);
                self.queue.push_front((p, item));
            }
            return Ok(None);
        }
        let w = self.w;
        for &i in &path {
            w.push_index(i);
        }
        self.counter.begin(true);
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let seed = seed.take().ok_or_else(|| de::Error::custom("an item without a reader"))?;
        let r = self.deliver(seed, &mut de).map_err(de::Error::custom);
        self.counter.end();
        for _ in &path {
            w.pop_index();
        }
        r.map(Some)
    }

    fn deliver<T: DeserializeSeed<'de>, D: Deserializer<'de>>(&self, seed: T, d: D) -> Result<T::Value, D::Error> {
        CheckedSeed { seed, shape: self.shape, w: self.w }.deserialize(d)
    }

    /// Whether nested lists are flattened into this one (not for lists of `Value`s).
    fn flattens(&self) -> bool {
        match self.item_kind() {
            Kind::Message(m) => {
                !matches!(self.w.schema.message(m).wkt, crate::schema::Wkt::Value | crate::schema::Wkt::ListValue)
            }
            _ => true,
        }
    }
}

impl<'w, 'de, S: SeqAccess<'de>> SeqAccess<'de> for RepeatedSeq<'w, 'de, S> {
    type Error = S::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, S::Error> {
        let mut slot = Some(seed);
        let list = &mut self.list;
        loop {
            if let Some((path, raw)) = list.queue.pop_front() {
                if let Some(v) = list.deliver_raw(path, raw, &mut slot)? {
                    return Ok(Some(v));
                }
                continue;
            }
            if list.done {
                return Ok(None);
            }
            let index = list.json_index;
            list.w.push_index(index);
            let got = self.inner.next_element_seed(Item { list: &mut *list, slot: &mut slot, index });
            list.w.pop_index();
            match got? {
                None => {
                    list.done = true;
                    list.counter.finish();
                    return Ok(None);
                }
                Some(Some(v)) => {
                    list.json_index += 1;
                    return Ok(Some(v));
                }
                // A nested list: its items are queued.
                Some(None) => list.json_index += 1,
            }
        }
    }
}

/// One element of a [`RepeatedSeq`]'s own list.
struct Item<'a, 'w, 'de, T> {
    list: &'a mut List<'w, 'de>,
    slot: &'a mut Option<T>,
    index: usize,
}

impl<'a, 'w, 'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Item<'a, 'w, 'de, T> {
    type Value = Option<T::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'a, 'w, 'de, T: DeserializeSeed<'de>> Item<'a, 'w, 'de, T> {
    fn one<D: Deserializer<'de>>(self, d: D) -> Result<Option<T::Value>, D::Error> {
        let seed = self.slot.take().ok_or_else(|| de::Error::custom("an item without a reader"))?;
        self.list.counter.begin(true);
        let r = self.list.deliver(seed, d);
        self.list.counter.end();
        r.map(Some)
    }
}

impl<'a, 'w, 'de, T: DeserializeSeed<'de>> Visitor<'de> for Item<'a, 'w, 'de, T> {
    type Value = Option<T::Value>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list item")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::Bool(v))).map_err(de::Error::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::U64(v))).map_err(de::Error::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::I64(v))).map_err(de::Error::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::F64(v))).map_err(de::Error::custom)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::Str(Cow::Borrowed(v)))).map_err(de::Error::custom)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::Str(Cow::Owned(v.to_owned())))).map_err(de::Error::custom)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.one(EvDe(Ev::Str(Cow::Owned(v)))).map_err(de::Error::custom)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        let w = self.list.w;
        if w.mode() == Mode::Cilium {
            w.agent_refuses("`null` in a list", None);
        }
        // Envoy's lenient parser reads `null` as the item's default value.
        match self.list.item_kind() {
            Kind::Message(_) => self.one(MapAccessDeserializer::new(EmptyMap)).map_err(de::Error::custom),
            k => self.one(EvDe(default_item(k))).map_err(de::Error::custom),
        }
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.one(MapAccessDeserializer::new(a))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        let w = self.list.w;
        if !self.list.flattens() {
            return self.one(serde::de::value::SeqAccessDeserializer::new(s));
        }
        if w.mode() == Mode::Cilium {
            w.agent_refuses("a list inside a list", None);
        }
        // Envoy flattens a nested list into the field's own: its items are read ahead, in order,
        // and handed out as the field's next items.
        let mut j = 0;
        let mut items = Vec::new();
        while let Some(raw) = s.next_element::<&'de RawValue>()? {
            items.push((vec![self.index, j], raw));
            j += 1;
        }
        for item in items.into_iter().rev() {
            self.list.queue.push_front(item);
        }
        Ok(None)
    }
}

/// A single value given where a list belongs: a list of one.
pub(crate) struct OneSeq<'w, 'de, D> {
    item: Option<D>,
    w: &'w Walk<'de>,
    shape: Shape,
    counter: Counter<'w, 'de>,
}

impl<'w, 'de, D> OneSeq<'w, 'de, D> {
    pub(crate) fn new(item: D, m: MsgId, i: u16, w: &'w Walk<'de>) -> Self {
        let counter = Counter::new(w, m, i);
        let shape = item_shape(w, m, i, counter.at);
        OneSeq { item: Some(item), w, shape, counter }
    }
}

impl<'w, 'de, D: Deserializer<'de>> SeqAccess<'de> for OneSeq<'w, 'de, D> {
    type Error = D::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, D::Error> {
        let Some(item) = self.item.take() else {
            self.counter.finish();
            return Ok(None);
        };
        // Envoy's path has no index for it; PGV's counts it as item 0.
        self.counter.begin(false);
        let r = CheckedSeed { seed, shape: self.shape, w: self.w }.deserialize(item);
        self.counter.end();
        r.map(Some)
    }
}

/// A map field's object: each key once, each value checked as the map's values are.
pub(crate) struct MapField<'w, 'de, A> {
    inner: A,
    w: &'w Walk<'de>,
    msg: MsgId,
    field: u16,
    entry: MsgId,
    at: u16,
    count: u64,
    keys: InputSet<Cow<'de, str>>,
    pending: Option<(Cow<'de, str>, Option<usize>)>,
}

impl<'w, 'de, A: MapAccess<'de>> MapField<'w, 'de, A> {
    pub(crate) fn new(inner: A, msg: MsgId, field: u16, entry: MsgId, w: &'w Walk<'de>) -> Self {
        let at = w.depth().saturating_sub(1) as u16;
        MapField { inner, w, msg, field, entry, at, count: 0, keys: InputSet::default(), pending: None }
    }

    fn rules(&self) -> Option<&'static MapRules> {
        map_rules(self.w.schema.message(self.msg).field(self.field).rules.as_deref())
    }

    /// Enters the pending key: the shape of its value, and the key when the value's type is
    /// looked up afterwards (a per-route filter config).
    fn enter_value(&mut self) -> (Shape, Option<KeyAt<'de>>) {
        let w = self.w;
        let (key, offset) = self.pending.take().unwrap_or((Cow::Borrowed(""), None));
        let entry = w.schema.message(self.entry);
        let rules = self.rules().and_then(|r| r.values.as_ref());
        let shape = Shape::Value { kind: entry.field(1).kind, rules, at: self.at };
        let per_filter = w.schema.message(self.msg).field(self.field).per_filter_config;
        let name = per_filter.then(|| (key.clone(), offset));
        w.enter_key(key, offset, None);
        (shape, name)
    }

    fn leave_value(&mut self, pending: Option<KeyAt<'de>>) {
        let w = self.w;
        let last = w.take_last();
        if let (Some((name, offset)), Some(Some(t))) = (pending, last.any_type) {
            self.per_filter_lookup(&name, t, offset);
        }
        w.leave_key(false);
        self.count += 1;
    }

    /// Envoy finds the factory of a per-route filter config by the config's type, among the
    /// HTTP filters' (whose factories list their per-route types too). A `FilterConfig` wrapper
    /// is unwrapped first, with its `is_optional`; it is not looked into here.
    fn per_filter_lookup(&self, name: &str, t: MsgId, offset: Option<usize>) {
        let w = self.w;
        let target = w.schema.message(t);
        if w.mode() == Mode::Silent
            || target.wkt == crate::schema::Wkt::TypedStruct
            || &*target.full_name == "envoy.config.route.v3.FilterConfig"
            || target.factory_categories.contains(&"envoy.filters.http")
        {
            return;
        }
        let url = &target.full_name;
        w.problem(
            ProblemKind::UnknownExtension,
            format!("per-route config of `{name}`: no HTTP filter of Envoy 1.40 takes `{url}`"),
            Some(format!("Didn't find a registered implementation for '{name}' with type URL: '{url}'")),
            offset,
        );
    }

    fn finish(&self) {
        self.w.set_index(-1, None);
        if let Some(r) = self.rules()
            && let Some(reason) = r.check_count(self.count)
        {
            self.w.constraint_at(self.at, None, &reason, None);
        }
    }
}

impl<'w, 'de, A: MapAccess<'de>> MapAccess<'de> for MapField<'w, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        let w = self.w;
        loop {
            let Some(key) = self.inner.next_key::<KeyStr<'de>>()? else {
                self.finish();
                return Ok(None);
            };
            let offset = key.offset(w);
            let key = key.0;
            w.set_index(self.count as i64, Some(PgvIndex::Key(key.clone())));
            if !self.keys.insert(key.clone()) {
                w.with_key(key.clone(), offset, || {
                    w.invalid(&format!("got unexpectedly-repeated repeated map key: '{key}'"), offset)
                });
                self.inner.next_value::<IgnoredAny>()?;
                continue;
            }
            let entry = w.schema.message(self.entry);
            match entry.field(0).kind {
                Kind::String => {}
                Kind::Bool if key != "true" && key != "false" => {
                    w.with_key(key.clone(), offset, || {
                        w.invalid(&format!("expected bool string, got '{key}'"), offset)
                    });
                }
                k if k != Kind::Bool && key.parse::<i128>().is_err() => {
                    w.with_key(key.clone(), offset, || w.invalid("non-number characters in quoted number", offset));
                }
                _ => {}
            }
            if let Some(kr) = self.rules().and_then(|r| r.keys.as_ref()).and_then(|r| r.kind.as_ref())
                && let KindRules::String(sr) = kr
                && let Some(reason) = sr.check(&key)
                && w.mode() != Mode::Silent
            {
                let m = w.schema.message(self.msg);
                let f = m.field(self.field);
                let leaf = Leaf::Key { message: &m.name, field: &f.pgv_name, key: key.to_string() };
                let envoy = w.pgv_error(usize::from(self.at), leaf, &reason);
                w.with_key(key.clone(), offset, || {
                    w.problem_here(ProblemKind::Constraint, format!("map key `{key}`: {reason}"), envoy, offset)
                });
            }
            self.pending = Some((key.clone(), offset));
            return hand_key(seed, key).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let w = self.w;
        let (shape, pending) = self.enter_value();
        let r = self.inner.next_value_seed(CheckedSeed { seed, shape, w });
        w.note_failure(r.is_err());
        self.leave_value(pending);
        r
    }
}

/// A list whose items all have one shape (CiliumEnvoyConfig resources, a `kind: List`'s items),
/// each read in `mode` when it is given.
pub(crate) struct EachSeq<'w, 'de, S> {
    inner: S,
    w: &'w Walk<'de>,
    shape: Shape,
    mode: Option<Mode>,
    index: usize,
}

impl<'w, 'de, S> EachSeq<'w, 'de, S> {
    pub(crate) fn new(inner: S, w: &'w Walk<'de>, shape: Shape, mode: Option<Mode>) -> Self {
        EachSeq { inner, w, shape, mode, index: 0 }
    }
}

impl<'w, 'de, S: SeqAccess<'de>> SeqAccess<'de> for EachSeq<'w, 'de, S> {
    type Error = S::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, S::Error> {
        let w = self.w;
        w.push_index(self.index);
        let shape = match self.shape {
            // An Any's `at` is its own component, which a list item has none of.
            Shape::Value { kind, rules, .. } => Shape::Value { kind, rules, at: w.depth() as u16 },
            s => s,
        };
        let r = match self.mode {
            Some(m) => {
                let before = w.swap_mode(m);
                let r = self.inner.next_element_seed(CheckedSeed { seed, shape, w });
                w.swap_mode(before);
                r
            }
            None => self.inner.next_element_seed(CheckedSeed { seed, shape, w }),
        };
        w.note_failure(r.is_err());
        w.pop_index();
        w.take_last();
        self.index += 1;
        r
    }
}
