//! The adapter itself: a `Deserializer` that checks each JSON value against what the schema says
//! it is, then hands the typed reader its canonical form.

use std::borrow::Cow;

use serde::de::value::{
    BoolDeserializer, BorrowedStrDeserializer, F64Deserializer, I64Deserializer, MapAccessDeserializer,
    SeqAccessDeserializer, StringDeserializer, U64Deserializer,
};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::message::{CecSpecMap, K8sMap, MessageMap, ObjKind};
use super::repeated::{EachSeq, ListDe, MapField, OneSeq, RepeatedSeq};
use super::scalar::{Ev, Parsed, Refusal, parse};
use super::texts::Leaf;
use super::{Comp, Last, Mode, Walk, wkt};
use crate::model::problem::ProblemKind;
use crate::schema::rules::{Dur, KindRules, check_bool};
use crate::schema::{Card, FieldRules, Kind, MsgId, Wkt};

/// What a JSON value is, in the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Not Envoy configuration (a Kubernetes object's metadata, an Any of a type Envoy's schema
    /// lacks): passed through as it is.
    Free,
    /// The value of field `.1` of message `.0`: a list, a map or one value, as the field is.
    Field(MsgId, u16),
    /// One value of `kind`, with the rules that apply to it (a field's, a list item's, a map
    /// value's); `at` is the path component of the field whose rules they are.
    Value { kind: Kind, rules: Option<&'static FieldRules>, at: u16 },
    /// A Kubernetes object (a CiliumEnvoyConfig, a `kind: List`, anything else).
    K8s,
    /// A `kind: List`'s `items`: Kubernetes objects.
    K8sItems,
    /// A CiliumEnvoyConfig's `spec`.
    CecSpec,
    /// A CiliumEnvoyConfig's `spec.resources`: Anys the Cilium agent decodes strictly.
    CecResources,
}

impl Shape {
    /// A whole message (a document's root, an Any's payload): no rules of a field apply.
    pub(crate) fn message(m: MsgId, w: &Walk<'_>) -> Shape {
        Shape::Value { kind: Kind::Message(m), rules: None, at: w.depth().saturating_sub(1) as u16 }
    }
}

/// A `Deserializer` over `de` that checks what it reads against `shape`.
pub(crate) struct Checked<'w, 'de, D> {
    pub(crate) de: D,
    pub(crate) shape: Shape,
    pub(crate) w: &'w Walk<'de>,
}

impl<'w, 'de, D: Deserializer<'de>> Deserializer<'de> for Checked<'w, 'de, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        match self.shape {
            Shape::Free => self.de.deserialize_any(v),
            shape => self.de.deserialize_any(Adapter { v, shape, w: self.w, option: false }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        match self.shape {
            Shape::Free => self.de.deserialize_option(v),
            shape => self.de.deserialize_any(Adapter { v, shape, w: self.w, option: true }),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, D::Error> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// [`Checked`] as a seed, for the values of maps and lists.
pub(crate) struct CheckedSeed<'w, 'de, S> {
    pub(crate) seed: S,
    pub(crate) shape: Shape,
    pub(crate) w: &'w Walk<'de>,
}

impl<'w, 'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for CheckedSeed<'w, 'de, S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Checked { de, shape: self.shape, w: self.w })
    }
}

/// The visitor the adapter gives the real deserializer: it sees the JSON value, checks it and
/// passes the typed reader's visitor `v` what it should read.
struct Adapter<'w, 'de, V> {
    v: V,
    shape: Shape,
    w: &'w Walk<'de>,
    /// The typed reader asked for an `Option`: a value is handed over as `Some`.
    option: bool,
}

/// A map with no entries: what the typed reader of a message gets for a refused value.
pub(crate) struct EmptyMap;

impl<'de> MapAccess<'de> for EmptyMap {
    type Error = de::value::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _: K) -> Result<Option<K::Value>, Self::Error> {
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("no value"))
    }
}

fn relay<E: de::Error>(e: de::value::Error) -> E {
    E::custom(e)
}

/// Drains a map the typed reader is not shown.
fn drain_map<'de, A: MapAccess<'de>>(mut a: A) -> Result<(), A::Error> {
    while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, S: SeqAccess<'de>>(mut s: S) -> Result<(), S::Error> {
    while s.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'w, 'de, V: Visitor<'de>> Adapter<'w, 'de, V> {
    fn is_message(&self) -> bool {
        match self.shape {
            Shape::Value { kind: Kind::Message(_), .. } | Shape::K8s => true,
            Shape::Field(m, i) => {
                let f = self.w.schema.message(m).field(i);
                f.card == Card::Single && matches!(f.kind, Kind::Message(_))
            }
            _ => false,
        }
    }

    /// Hands the typed reader "unset": what a refused value (or `null`) becomes in the model.
    fn unset<E: de::Error>(self) -> Result<V::Value, E> {
        self.w.set_last(Last { refused: self.w.take_refused(), ..Last::default() });
        if self.option {
            self.v.visit_none()
        } else if self.is_message() {
            self.v.visit_map(EmptyMap).map_err(relay)
        } else {
            self.v.visit_unit()
        }
    }

    /// Hands the typed reader a scalar.
    fn give<E: de::Error>(self, p: Parsed<'de>, raw: &Ev<'de>) -> Result<V::Value, E> {
        record_given(self.w, &p);
        let (v, option) = (self.v, self.option);
        match p {
            Parsed::Bool(b) if option => v.visit_some(BoolDeserializer::new(b)),
            Parsed::Bool(b) => v.visit_bool(b),
            Parsed::Signed(n) if option => v.visit_some(I64Deserializer::new(n)),
            Parsed::Signed(n) => v.visit_i64(n),
            Parsed::Unsigned(n) if option => v.visit_some(U64Deserializer::new(n)),
            Parsed::Unsigned(n) => v.visit_u64(n),
            Parsed::Float(f) if option => v.visit_some(F64Deserializer::new(f)),
            Parsed::Float(f) => v.visit_f64(f),
            Parsed::Enum(n) if n >= 0 && option => v.visit_some(U64Deserializer::new(n as u64)),
            Parsed::Enum(n) if n >= 0 => v.visit_u64(n as u64),
            Parsed::Enum(n) if option => v.visit_some(I64Deserializer::new(i64::from(n))),
            Parsed::Enum(n) => v.visit_i64(i64::from(n)),
            Parsed::Str(s) => give_str(v, option, s),
            // The typed readers never read bytes; they get the text as written.
            Parsed::Bytes(_) => match raw {
                Ev::Str(s) => give_str(v, option, s.clone()),
                _ => v.visit_unit(),
            },
        }
    }

    /// Passes a value through as it is (a Struct's, a Value's).
    fn pass<E: de::Error>(self, ev: Ev<'de>) -> Result<V::Value, E> {
        self.w.set_last(Last { set: true, ..Last::default() });
        let (v, option) = (self.v, self.option);
        match ev {
            Ev::Bool(b) if option => v.visit_some(BoolDeserializer::new(b)),
            Ev::Bool(b) => v.visit_bool(b),
            Ev::U64(n) if option => v.visit_some(U64Deserializer::new(n)),
            Ev::U64(n) => v.visit_u64(n),
            Ev::I64(n) if option => v.visit_some(I64Deserializer::new(n)),
            Ev::I64(n) => v.visit_i64(n),
            Ev::F64(f) if option => v.visit_some(F64Deserializer::new(f)),
            Ev::F64(f) => v.visit_f64(f),
            Ev::Str(s) => give_str(v, option, s),
            Ev::Null if option => v.visit_none(),
            Ev::Null => v.visit_unit(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Scalars.

    fn scalar<E: de::Error>(self, ev: Ev<'de>) -> Result<V::Value, E> {
        match judge_scalar(self.w, self.shape, ev) {
            Scalar::Pass(ev) => self.pass(ev),
            Scalar::Give(p, raw) => self.give(p, &raw),
            Scalar::Unset => self.unset(),
            Scalar::One(m, i, ev) => {
                let w = self.w;
                let seq = OneSeq::new(EvDe(ev), m, i, w);
                let r = if self.option {
                    self.v.visit_some(SeqAccessDeserializer::new(seq)).map_err(relay)
                } else {
                    self.v.visit_seq(seq).map_err(relay)
                };
                // After the item, whose own reading sets (and takes) what was last read.
                w.set_last(Last { set: true, ..Last::default() });
                r
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Objects.

    fn object<A: MapAccess<'de>>(self, a: A) -> Result<V::Value, A::Error> {
        let w = self.w;
        // The map is made in place (see `take_object`) and handed on by reference.
        let mut map = AnyMap::Empty;
        match take_object(w, self.shape, a, &mut map)? {
            Taken::Map(after) => {
                let r = self.hand_map(&mut map);
                after.run(w);
                r
            }
            Taken::One(m, i, a) => {
                let seq = OneSeq::new(MapAccessDeserializer::new(a), m, i, w);
                let r = if self.option {
                    self.v.visit_some(SeqAccessDeserializer::new(seq))
                } else {
                    self.v.visit_seq(seq)
                };
                // After the item, whose own reading sets (and takes) what was last read.
                w.set_last(Last { set: true, ..Last::default() });
                r
            }
            Taken::Scalar(Some((p, e))) => self.give(p, &e),
            Taken::Scalar(None) => self.unset(),
        }
    }

    fn hand_seq<S: SeqAccess<'de>>(self, seq: &mut AnySeq<'w, 'de, S>) -> Result<V::Value, S::Error> {
        if self.option { self.v.visit_some(ListDe { seq }) } else { self.v.visit_seq(seq) }
    }

    fn hand_map<A: MapAccess<'de>>(self, map: &mut AnyMap<'w, 'de, A>) -> Result<V::Value, A::Error> {
        // By reference: a message's reader is a few hundred bytes, and the typed reader's
        // visitor would move it again.
        if self.option { self.v.visit_some(MapAccessDeserializer::new(map)) } else { self.v.visit_map(map) }
    }

    // -----------------------------------------------------------------------------------------
    // Lists.

    fn list<S: SeqAccess<'de>>(self, s: S) -> Result<V::Value, S::Error> {
        let w = self.w;
        // Made in place, as a map is (see `take_list`).
        let mut seq = None;
        let repeated = take_list(w, self.shape, s, &mut seq)?;
        match seq.as_mut() {
            Some(seq) => {
                let r = self.hand_seq(seq);
                if repeated {
                    w.set_last(Last { set: true, empty: w.list_len() == 0, ..Last::default() });
                }
                r
            }
            None => self.unset(),
        }
    }
}

/// An object taken in hand for the typed reader: a map (made in the caller's place, see
/// [`take_object`]) with what follows it, a list of one, or a scalar (a wrapper's value).
enum Taken<'de, A> {
    Map(AfterObject),
    One(MsgId, u16, A),
    /// `None`: refused, unset.
    Scalar(Option<(Parsed<'de>, Ev<'de>)>),
}

/// Judges an object and makes what the typed reader reads of it. A map is written into `map`,
/// the caller's place for it, rather than returned: a message's reader is a few hundred bytes,
/// and returned it was copied on its way (2% of a tenant-scale run's instructions). Generic
/// over the map only, so it is compiled once, not once per typed reader (as part of the
/// adapter's `object`, it made the page's .wasm 0.6 MB larger).
fn take_object<'w, 'de, A: MapAccess<'de>>(
    w: &'w Walk<'de>,
    shape: Shape,
    a: A,
    map: &mut AnyMap<'w, 'de, A>,
) -> Result<Taken<'de, A>, A::Error> {
    let after = match judge_object(w, shape) {
        Obj::Plain => {
            *map = AnyMap::Plain(a);
            AfterObject::Nothing
        }
        Obj::K8s => {
            *map = AnyMap::K8s(K8sMap::new(a, w));
            AfterObject::Set
        }
        Obj::CecSpec => {
            *map = AnyMap::Cec(CecSpecMap::new(a, w));
            AfterObject::Set
        }
        Obj::One(m, i) => return Ok(Taken::One(m, i, a)),
        Obj::Map(m, i, entry) => {
            *map = AnyMap::Field(MapField::new(a, m, i, entry, w));
            AfterObject::Set
        }
        Obj::Struct => {
            w.set_last(Last { set: true, ..Last::default() });
            *map = AnyMap::Plain(a);
            AfterObject::Nothing
        }
        Obj::Wrapper(m, rules, at) => return Ok(Taken::Scalar(read_wrapper(w, a, m, rules, at)?)),
        Obj::Duration(m, rules, at) => {
            read_duration(w, a, m, rules, at)?;
            AfterObject::Nothing
        }
        Obj::Any(rules, at) => {
            *map = AnyMap::Message(MessageMap::new(a, w, ObjKind::Any { rules, at }));
            AfterObject::FinishAny
        }
        Obj::Message(m) => {
            *map = AnyMap::Message(MessageMap::new(a, w, ObjKind::Message(m)));
            AfterObject::Set
        }
        Obj::Refused => {
            drain_map(a)?;
            return Ok(Taken::Scalar(None));
        }
    };
    Ok(Taken::Map(after))
}

/// Judges a list and makes what the typed reader reads of it in `seq`, the caller's place (as
/// [`take_object`] does a map; left `None` when refused): whether it is a repeated field's.
fn take_list<'w, 'de, S: SeqAccess<'de>>(
    w: &'w Walk<'de>,
    shape: Shape,
    s: S,
    seq: &mut Option<AnySeq<'w, 'de, S>>,
) -> Result<bool, S::Error> {
    let repeated = match judge_list(w, shape) {
        List::Plain => {
            *seq = Some(AnySeq::Plain(s));
            false
        }
        List::K8sItems => {
            *seq = Some(AnySeq::Each(EachSeq::new(s, w, Shape::K8s, None)));
            false
        }
        List::CecResources => {
            let any = w.schema.known("google.protobuf.Any");
            let shape = Shape::Value { kind: Kind::Message(any), rules: None, at: 0 };
            *seq = Some(AnySeq::Each(EachSeq::new(s, w, shape, Some(Mode::Cilium))));
            false
        }
        List::Repeated(m, i) => {
            *seq = Some(AnySeq::Repeated(RepeatedSeq::new(s, m, i, w)));
            true
        }
        List::Value => {
            w.set_last(Last { set: true, ..Last::default() });
            *seq = Some(AnySeq::Plain(s));
            false
        }
        List::Refused => {
            drain_seq(s)?;
            false
        }
    };
    Ok(repeated)
}

/// What follows the typed reader's reading of a map.
enum AfterObject {
    Nothing,
    /// The field is set.
    Set,
    /// An Any ended.
    FinishAny,
}

impl AfterObject {
    fn run(self, w: &Walk<'_>) {
        match self {
            AfterObject::Nothing => {}
            AfterObject::Set => w.set_last(Last { set: true, ..Last::default() }),
            AfterObject::FinishAny => w.finish_any(),
        }
    }
}

/// What a JSON object is read as, judged without the typed reader (see [`Scalar`]).
enum Obj {
    Plain,
    K8s,
    CecSpec,
    /// A single message where field `.1` of `.0` is a list: a list of one.
    One(MsgId, u16),
    /// Map field `.1` of `.0`, whose entries are `.2`.
    Map(MsgId, u16, MsgId),
    /// A Struct or Value: any JSON.
    Struct,
    Wrapper(MsgId, Option<&'static FieldRules>, u16),
    Duration(MsgId, Option<&'static FieldRules>, u16),
    Any(Option<&'static FieldRules>, u16),
    Message(MsgId),
    /// Refused: drained and unset.
    Refused,
}

fn judge_object(w: &Walk<'_>, shape: Shape) -> Obj {
    match shape {
        Shape::Free | Shape::K8sItems | Shape::CecResources => Obj::Plain,
        Shape::K8s => Obj::K8s,
        Shape::CecSpec => Obj::CecSpec,
        Shape::Field(m, i) => {
            let f = w.schema.message(m).field(i);
            match f.card {
                Card::Single => {
                    let at = w.depth().saturating_sub(1) as u16;
                    judge_object(w, Shape::Value { kind: f.kind, rules: f.rules.as_deref(), at })
                }
                Card::Repeated if w.mode() == Mode::Cilium => {
                    w.agent_refuses("a single value where a list belongs", w.value_offset());
                    Obj::Refused
                }
                Card::Repeated => Obj::One(m, i),
                Card::Map(entry) => Obj::Map(m, i, entry),
            }
        }
        Shape::Value { kind: Kind::Message(m), rules, at } => match w.schema.message(m).wkt {
            Wkt::Struct | Wkt::Value => Obj::Struct,
            Wkt::Wrapper => Obj::Wrapper(m, rules, at),
            Wkt::Duration if w.mode() != Mode::Cilium => Obj::Duration(m, rules, at),
            Wkt::Any => Obj::Any(rules, at),
            Wkt::Duration | Wkt::Timestamp | Wkt::FieldMask | Wkt::ListValue if w.mode() == Mode::Cilium => {
                w.agent_refuses("a well-known type written as its message object", w.value_offset());
                Obj::Refused
            }
            _ => Obj::Message(m),
        },
        Shape::Value { kind, .. } => {
            let msg = match kind {
                Kind::String | Kind::Bytes => "unexpected character: '{'; expected '\"'",
                Kind::Bool => "expected 'true' or 'false'",
                _ => "expected number or string",
            };
            w.invalid(msg, w.value_offset());
            Obj::Refused
        }
    }
}

/// What a JSON list is read as, judged without the typed reader (see [`Scalar`]).
enum List {
    Plain,
    K8sItems,
    CecResources,
    /// Repeated field `.1` of `.0`.
    Repeated(MsgId, u16),
    /// A Value or ListValue: any JSON list.
    Value,
    Refused,
}

fn judge_list(w: &Walk<'_>, shape: Shape) -> List {
    match shape {
        Shape::Free | Shape::K8s | Shape::CecSpec => List::Plain,
        Shape::K8sItems => List::K8sItems,
        Shape::CecResources => List::CecResources,
        Shape::Field(m, i) => {
            let f = w.schema.message(m).field(i);
            match f.card {
                Card::Repeated => List::Repeated(m, i),
                Card::Single => {
                    let at = w.depth().saturating_sub(1) as u16;
                    judge_list(w, Shape::Value { kind: f.kind, rules: f.rules.as_deref(), at })
                }
                Card::Map(_) => {
                    w.invalid("unexpected character: '['; expected '{'", w.value_offset());
                    List::Refused
                }
            }
        }
        Shape::Value { kind, .. } => {
            if let Kind::Message(m) = kind {
                match w.schema.message(m).wkt {
                    Wkt::Value | Wkt::ListValue => return List::Value,
                    Wkt::Struct => {
                        w.with_comp(struct_comp(), || {
                            w.invalid("unexpected character: '['; expected '{'", w.value_offset())
                        });
                        return List::Refused;
                    }
                    _ => {}
                }
            }
            let msg = match kind {
                Kind::String | Kind::Bytes => "unexpected character: '['; expected '\"'",
                Kind::Bool => "expected 'true' or 'false'",
                Kind::Message(m) => match w.schema.message(m).wkt {
                    Wkt::Duration | Wkt::Timestamp | Wkt::FieldMask => "unexpected character: '['; expected '\"'",
                    Wkt::Wrapper => match w.schema.message(m).field(0).kind {
                        Kind::String | Kind::Bytes => "unexpected character: '['; expected '\"'",
                        Kind::Bool => "expected 'true' or 'false'",
                        _ => "expected number or string",
                    },
                    _ => "unexpected character: '['; expected '{'",
                },
                _ => "expected number or string",
            };
            w.invalid(msg, w.value_offset());
            List::Refused
        }
    }
}

/// What the message reader is told of a scalar handed over.
fn record_given<'de>(w: &Walk<'de>, p: &Parsed<'de>) {
    let string = match p {
        Parsed::Str(s) => Some(s.clone()),
        _ => None,
    };
    let boolean = match p {
        Parsed::Bool(b) => Some(*b),
        _ => None,
    };
    let text = w.capturing().then(|| format!("{p:?}"));
    // An empty string is as good as none to Envoy's own checks (proto3 has no "set to ''").
    let empty = matches!(p, Parsed::Str(s) if s.is_empty());
    w.set_last(Last { set: true, refused: false, empty, string, boolean, any_type: None, text });
}

/// The default value of a scalar kind.
fn default_of(kind: Kind) -> Parsed<'static> {
    match kind {
        Kind::Bool => Parsed::Bool(false),
        Kind::String => Parsed::Str(Cow::Borrowed("")),
        Kind::Bytes => Parsed::Bytes(Vec::new()),
        Kind::Double | Kind::Float => Parsed::Float(0.0),
        k if k.is_unsigned() => Parsed::Unsigned(0),
        _ => Parsed::Signed(0),
    }
}

fn give_str<'de, V: Visitor<'de>, E: de::Error>(v: V, option: bool, s: Cow<'de, str>) -> Result<V::Value, E> {
    match (s, option) {
        (Cow::Borrowed(b), true) => v.visit_some(BorrowedStrDeserializer::new(b)),
        (Cow::Borrowed(b), false) => v.visit_borrowed_str(b),
        (Cow::Owned(o), true) => v.visit_some(StringDeserializer::new(o)),
        (Cow::Owned(o), false) => v.visit_string(o),
    }
}

pub(super) fn struct_comp<'de>() -> Comp<'de> {
    Comp::opaque("<struct>", "google.protobuf.Struct.FieldsEntry")
}

/// What a scalar JSON value becomes for the typed reader, judged without it: the judging is
/// compiled once, not once per typed reader.
enum Scalar<'de> {
    /// Passed through as it is (a Struct's, a Value's, a FieldMask's).
    Pass(Ev<'de>),
    /// Parsed and checked: the canonical value, and the value as written.
    Give(Parsed<'de>, Ev<'de>),
    /// Refused, or `null`: unset.
    Unset,
    /// A single value where field `.1` of `.0` is a list: a list of one.
    One(MsgId, u16, Ev<'de>),
}

fn at_offset(w: &Walk<'_>, ev: &Ev<'_>) -> Option<usize> {
    match ev {
        // A borrowed string knows where it is; its quote is one byte before.
        Ev::Str(Cow::Borrowed(s)) => w.offset_of(s).map(|o| o.saturating_sub(1)),
        _ => w.value_offset(),
    }
}

fn judge_scalar<'de>(w: &Walk<'de>, shape: Shape, ev: Ev<'de>) -> Scalar<'de> {
    match shape {
        Shape::Free | Shape::K8s | Shape::K8sItems | Shape::CecSpec | Shape::CecResources => Scalar::Pass(ev),
        Shape::Field(m, i) => {
            let f = w.schema.message(m).field(i);
            match f.card {
                Card::Single => {
                    let at = w.depth().saturating_sub(1) as u16;
                    judge_scalar(w, Shape::Value { kind: f.kind, rules: f.rules.as_deref(), at }, ev)
                }
                Card::Repeated if matches!(ev, Ev::Null) => Scalar::Unset,
                Card::Repeated => {
                    if w.mode() == Mode::Cilium {
                        w.agent_refuses("a single value where a list belongs", at_offset(w, &ev));
                        return Scalar::Unset;
                    }
                    Scalar::One(m, i, ev)
                }
                Card::Map(_) if matches!(ev, Ev::Null) => Scalar::Unset,
                Card::Map(_) => {
                    let c = ev.first_char(w.value_text());
                    w.invalid(&format!("unexpected character: '{c}'; expected '{{'"), at_offset(w, &ev));
                    Scalar::Unset
                }
            }
        }
        Shape::Value { kind, rules, at } => judge_value_scalar(w, ev, kind, rules, at),
    }
}

fn judge_value_scalar<'de>(
    w: &Walk<'de>,
    ev: Ev<'de>,
    kind: Kind,
    rules: Option<&'static FieldRules>,
    at: u16,
) -> Scalar<'de> {
    let schema = w.schema;
    if let Ev::Null = ev {
        return match kind {
            Kind::Message(m) if schema.message(m).wkt == Wkt::Value => Scalar::Pass(Ev::Null),
            Kind::Enum(e) if schema.enumeration(e).is_null_value => Scalar::Give(Parsed::Enum(0), ev),
            _ => Scalar::Unset,
        };
    }
    let offset = at_offset(w, &ev);
    let kind = match kind {
        Kind::Message(m) => match schema.message(m).wkt {
            Wkt::Wrapper => schema.message(m).field(0).kind,
            Wkt::Value => return Scalar::Pass(ev),
            Wkt::Duration | Wkt::Timestamp | Wkt::FieldMask => return judge_wkt_string(w, ev, m, rules, at, offset),
            Wkt::Struct => {
                let c = ev.first_char(w.value_text());
                w.with_comp(struct_comp(), || {
                    w.invalid(&format!("unexpected character: '{c}'; expected '{{'"), offset)
                });
                return Scalar::Unset;
            }
            Wkt::ListValue => {
                let c = ev.first_char(w.value_text());
                w.with_comp(list_comp(), || w.invalid(&format!("unexpected character: '{c}'; expected '['"), offset));
                return Scalar::Unset;
            }
            Wkt::None | Wkt::Any | Wkt::TypedStruct => {
                let c = ev.first_char(w.value_text());
                w.invalid(&format!("unexpected character: '{c}'; expected '{{'"), offset);
                return Scalar::Unset;
            }
        },
        k => k,
    };
    let cilium = w.mode() == Mode::Cilium;
    if cilium && kind == Kind::Bool && matches!(ev, Ev::Str(_)) {
        let Ev::Str(s) = &ev else { unreachable!() };
        w.agent_refuses(&format!("a boolean written as the string \"{s}\""), offset);
        return Scalar::Unset;
    }
    let enum_number = |name: &str| match kind {
        Kind::Enum(e) if cilium => schema.enumeration(e).values.iter().find(|(n, _)| &**n == name).map(|&(_, v)| v),
        Kind::Enum(e) => schema.enumeration(e).number(name),
        _ => None,
    };
    match parse(kind, &ev, || w.value_text(), enum_number) {
        Ok(p) => {
            if let Some(r) = rules {
                w.check_value(r, &p, kind, at, offset);
            }
            Scalar::Give(p, ev)
        }
        Err(Refusal::At(m)) => {
            w.invalid(&m, offset);
            Scalar::Unset
        }
        Err(Refusal::UnknownEnum(name)) => {
            w.unknown_enum(&name, offset);
            Scalar::Unset
        }
    }
}

/// A Duration, Timestamp or FieldMask in its string form.
fn judge_wkt_string<'de>(
    w: &Walk<'de>,
    ev: Ev<'de>,
    m: MsgId,
    rules: Option<&'static FieldRules>,
    at: u16,
    offset: Option<usize>,
) -> Scalar<'de> {
    let wkt = w.schema.message(m).wkt;
    let Ev::Str(s) = &ev else {
        let c = ev.first_char(w.value_text());
        w.invalid(&format!("unexpected character: '{c}'; expected '\"'"), offset);
        return Scalar::Unset;
    };
    match wkt {
        Wkt::Duration => match wkt::parse_duration(s) {
            Ok(d) => w.check_duration(d, rules, at, offset),
            Err(m) => {
                w.invalid(m, offset);
                return Scalar::Unset;
            }
        },
        Wkt::Timestamp => {
            if let Err(m) = wkt::parse_timestamp(s) {
                w.invalid(m, offset);
                return Scalar::Unset;
            }
        }
        // Envoy's lenient mode takes any characters in a FieldMask's paths.
        _ => {}
    }
    Scalar::Pass(ev)
}

/// Every map the typed readers are handed, as one type: a typed reader's `visit_map` is then
/// compiled once per source of maps rather than once per kind of object (which doubled the
/// size of the binary and the page).
pub(crate) enum AnyMap<'w, 'de, A> {
    /// Passed through unchecked (a Struct, a Kubernetes object's free parts).
    Plain(A),
    Message(MessageMap<'w, 'de, A>),
    K8s(K8sMap<'w, 'de, A>),
    Cec(CecSpecMap<'w, 'de, A>),
    Field(MapField<'w, 'de, A>),
    /// Nothing: what a Duration object becomes once checked.
    Empty,
}

impl<'w, 'de, A: MapAccess<'de>> MapAccess<'de> for AnyMap<'w, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        match self {
            AnyMap::Plain(a) => a.next_key_seed(seed),
            AnyMap::Message(m) => m.next_key_seed(seed),
            AnyMap::K8s(m) => m.next_key_seed(seed),
            AnyMap::Cec(m) => m.next_key_seed(seed),
            AnyMap::Field(m) => m.next_key_seed(seed),
            AnyMap::Empty => Ok(None),
        }
    }
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match self {
            AnyMap::Plain(a) => a.next_value_seed(seed),
            AnyMap::Message(m) => m.next_value_seed(seed),
            AnyMap::K8s(m) => m.next_value_seed(seed),
            AnyMap::Cec(m) => m.next_value_seed(seed),
            AnyMap::Field(m) => m.next_value_seed(seed),
            AnyMap::Empty => Err(de::Error::custom("no value")),
        }
    }
}

/// Every list the typed readers are handed, as one type (see [`AnyMap`]).
pub(crate) enum AnySeq<'w, 'de, S> {
    Plain(S),
    Each(EachSeq<'w, 'de, S>),
    Repeated(RepeatedSeq<'w, 'de, S>),
}

impl<'w, 'de, S: SeqAccess<'de>> SeqAccess<'de> for AnySeq<'w, 'de, S> {
    type Error = S::Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, S::Error> {
        match self {
            AnySeq::Plain(s) => s.next_element_seed(seed),
            AnySeq::Each(s) => s.next_element_seed(seed),
            AnySeq::Repeated(s) => s.next_element_seed(seed),
        }
    }
}

/// Reads `{"value": ...}` of a wrapper type: the value to hand over (`None` when refused). Not
/// generic over the typed reader, so it is compiled once per source of maps.
fn read_wrapper<'de, A: MapAccess<'de>>(
    w: &Walk<'de>,
    mut a: A,
    m: MsgId,
    rules: Option<&'static FieldRules>,
    at: u16,
) -> Result<Option<(Parsed<'de>, Ev<'de>)>, A::Error> {
    if w.mode() == Mode::Cilium {
        w.agent_refuses("a wrapper value written as an object {\"value\": ...}", w.value_offset());
        drain_map(a)?;
        return Ok(None);
    }
    let inner = w.schema.message(m).field(0);
    let start = w.value_offset();
    let mut captured: Option<(Parsed<'de>, Ev<'de>)> = None;
    while let Some(key) = a.next_key::<super::message::KeyStr<'de>>()? {
        let offset = key.offset(w);
        if &*key.0 != "value" {
            w.with_key(key.0.clone(), offset, || w.unknown_field(&key.0, offset.map(|o| o.saturating_sub(1))));
            a.next_value::<IgnoredAny>()?;
            continue;
        }
        let comp = Comp::field(key.0.clone(), m, 0);
        let got = w.with_key_comp(key.0.clone(), offset, comp, || {
            a.next_value_seed(Capture { kind: inner.kind, rules, at, w })
        })?;
        if got.is_some() {
            captured = got;
        }
    }
    // The object sets the wrapper even without a value: `{}` and `{"value": null}` are its
    // default, which PGV then checks (envoy 1.40 refuses `destination_port: {}`).
    Ok(Some(captured.unwrap_or_else(|| {
        let p = default_of(inner.kind);
        if let Some(r) = rules {
            w.check_value(r, &p, inner.kind, at, start);
        }
        (p, Ev::Str(Cow::Borrowed("")))
    })))
}

/// Reads and checks `{"seconds": N, "nanos": N}` of a Duration.
fn read_duration<'de, A: MapAccess<'de>>(
    w: &Walk<'de>,
    mut a: A,
    m: MsgId,
    rules: Option<&'static FieldRules>,
    at: u16,
) -> Result<(), A::Error> {
    let start = w.value_offset();
    let message = w.schema.message(m);
    let mut d = Dur::default();
    while let Some(key) = a.next_key::<super::message::KeyStr<'de>>()? {
        let offset = key.offset(w);
        let Some((i, f)) = message.field_by_key(&key.0) else {
            w.with_key(key.0.clone(), offset, || w.unknown_field(&key.0, offset.map(|o| o.saturating_sub(1))));
            a.next_value::<IgnoredAny>()?;
            continue;
        };
        let comp = Comp::field(key.0.clone(), m, i);
        let got = w.with_key_comp(key.0.clone(), offset, comp, || {
            a.next_value_seed(Capture { kind: f.kind, rules: None, at, w })
        })?;
        match (f.number, got) {
            (1, Some((Parsed::Signed(s), _))) => d.seconds = s,
            (2, Some((Parsed::Signed(n), _))) => d.nanos = n as i32,
            _ => {}
        }
    }
    w.check_duration(d, rules, at, start);
    w.set_last(Last { set: true, ..Last::default() });
    Ok(())
}

fn list_comp<'de>() -> Comp<'de> {
    Comp::opaque("<list>", "google.protobuf.Value")
}

impl<'w, 'de, V: Visitor<'de>> Visitor<'de> for Adapter<'w, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Envoy configuration")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.scalar(Ev::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.scalar(Ev::I64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.scalar(Ev::U64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.scalar(Ev::F64(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.scalar(Ev::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.scalar(Ev::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.scalar(Ev::Str(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.scalar(Ev::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.scalar(Ev::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<V::Value, A::Error> {
        self.object(a)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, s: S) -> Result<V::Value, S::Error> {
        self.list(s)
    }
}

/// A seed that checks one scalar and gives it back parsed (a wrapper's or a Duration's field).
struct Capture<'w, 'de> {
    kind: Kind,
    rules: Option<&'static FieldRules>,
    at: u16,
    w: &'w Walk<'de>,
}

impl<'w, 'de> DeserializeSeed<'de> for Capture<'w, 'de> {
    type Value = Option<(Parsed<'de>, Ev<'de>)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'w, 'de> Visitor<'de> for Capture<'w, 'de> {
    type Value = Option<(Parsed<'de>, Ev<'de>)>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.take(Ev::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.take(Ev::I64(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.take(Ev::U64(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.take(Ev::F64(v)))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(self.take(Ev::Str(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.take(Ev::Str(Cow::Owned(v.to_owned()))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        let c = if self.kind.is_32_bit() || self.kind.is_signed() || self.kind.is_unsigned() {
            "expected number or string".to_owned()
        } else {
            "unexpected character: '{'; expected '\"'".to_owned()
        };
        self.w.invalid(&c, self.w.value_offset());
        drain_map(a)?;
        Ok(None)
    }
    fn visit_seq<S: SeqAccess<'de>>(self, s: S) -> Result<Self::Value, S::Error> {
        self.w.invalid("expected number or string", self.w.value_offset());
        drain_seq(s)?;
        Ok(None)
    }
}

impl<'de> Capture<'_, 'de> {
    fn take(self, ev: Ev<'de>) -> Option<(Parsed<'de>, Ev<'de>)> {
        let offset = self.w.value_offset();
        let enums = |_: &str| None;
        match parse(self.kind, &ev, || self.w.value_text(), enums) {
            Ok(p) => {
                if let Some(r) = self.rules {
                    self.w.check_value(r, &p, self.kind, self.at, offset);
                }
                Some((p, ev))
            }
            Err(Refusal::At(m)) => {
                self.w.invalid(&m, offset);
                None
            }
            Err(Refusal::UnknownEnum(n)) => {
                self.w.unknown_enum(&n, offset);
                None
            }
        }
    }
}

/// A deserializer that replays one scalar (a single value given for a list).
pub(crate) struct EvDe<'de>(pub(crate) Ev<'de>);

impl<'de> Deserializer<'de> for EvDe<'de> {
    type Error = de::value::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Ev::Bool(b) => v.visit_bool(b),
            Ev::U64(n) => v.visit_u64(n),
            Ev::I64(n) => v.visit_i64(n),
            Ev::F64(f) => v.visit_f64(f),
            Ev::Str(Cow::Borrowed(s)) => v.visit_borrowed_str(s),
            Ev::Str(Cow::Owned(s)) => v.visit_string(s),
            Ev::Null => v.visit_unit(),
        }
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

// ---------------------------------------------------------------------------------------------
// Recording what the adapter finds.

impl<'de> Walk<'de> {
    /// A value protobuf's parser refuses.
    pub(super) fn invalid(&self, message: &str, at: Option<usize>) {
        self.refuse();
        match self.mode() {
            Mode::Cilium => self.agent_refuses(message, at),
            _ => {
                let envoy = self.parse_error(message);
                self.problem(
                    ProblemKind::InvalidValue,
                    format!("{}: {message}", self.describe_short()),
                    Some(envoy),
                    at,
                );
            }
        }
    }

    /// What the Cilium agent's protojson decoder refuses.
    pub(super) fn agent_refuses(&self, what: &str, at: Option<usize>) {
        self.problem(
            ProblemKind::AgentRefuses,
            format!(
                "{}: {what}: the Cilium agent decodes CiliumEnvoyConfig resources with Go's protojson, which refuses this (Envoy's own parser would take it)",
                self.describe_short()
            ),
            None,
            at,
        );
    }

    /// An enum name the enum lacks.
    fn unknown_enum(&self, name: &str, at: Option<usize>) {
        let what = format!("{}: `{name}` is not a value of {}", self.describe_short(), self.enum_type_here());
        match self.mode() {
            Mode::Static => {
                self.refuse();
                let envoy = self.unknown_enum_error(name);
                self.problem(ProblemKind::UnknownField, what, Some(envoy), at);
            }
            Mode::Dynamic => {
                let warning = self.unknown_field_warning(&format!("unknown enum value: '{name}'"));
                self.problem(ProblemKind::IgnoredField, format!("{what}; Envoy ignores the field"), None, at);
                self.note(warning);
            }
            Mode::Cilium => self.agent_refuses(&format!("`{name}` is not a value of {}", self.enum_type_here()), at),
            Mode::Silent => {}
        }
    }

    fn enum_type_here(&self) -> &'static str {
        let st = self.st.borrow();
        st.comps.last().map_or("the enum", |c| c.type_name(self.schema))
    }

    /// PGV's rules of one scalar value.
    pub(super) fn check_value(&self, rules: &FieldRules, p: &Parsed<'_>, kind: Kind, at: u16, offset: Option<usize>) {
        let Some(kr) = &rules.kind else { return };
        let reason = match (kr, p) {
            (KindRules::Number(r), p) => p.num().and_then(|n| r.check(n)),
            (KindRules::Bool(c), Parsed::Bool(b)) => check_bool(*c, *b),
            (KindRules::String(r), Parsed::Str(s)) => r.check(s),
            (KindRules::Bytes(r), Parsed::Bytes(b)) => r.check(b),
            (KindRules::Enum(r), Parsed::Enum(n)) => match kind {
                Kind::Enum(e) => {
                    let en = self.schema.enumeration(e);
                    r.check(*n, |v| en.is_defined(v), |v| en.name_of(v).map_or_else(|| v.to_string(), str::to_owned))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(reason) = reason {
            self.constraint_at(at, None, &reason, offset);
        } else if let (KindRules::String(r), Parsed::Str(s)) = (kr, p)
            && r.re2
            && let Some(text) = crate::schema::re2::refusal(s)
        {
            self.problem(
                ProblemKind::InvalidSetting,
                format!("{}: RE2 refuses the pattern: {text}", self.describe_short()),
                Some(text),
                offset,
            );
        }
    }

    /// A Duration's PGV rules and Envoy's own check of it.
    fn check_duration(&self, d: Dur, rules: Option<&FieldRules>, at: u16, offset: Option<usize>) {
        if let Some(FieldRules { kind: Some(KindRules::Duration(r)), .. }) = rules
            && let Some(reason) = r.check(d)
        {
            self.constraint_at(at, None, &reason, offset);
        }
        if let Some(text) = wkt::envoy_duration_check(d) {
            self.problem(
                ProblemKind::InvalidSetting,
                format!("{}: {}", self.describe_short(), text.trim_start_matches("Invalid duration: ")),
                Some(text),
                offset,
            );
        }
    }

    /// A PGV failure of the field whose component is `at`.
    pub(super) fn constraint_at(&self, at: u16, index: Option<String>, reason: &str, offset: Option<usize>) {
        let Some((message, field, own_index)) = self.pgv_leaf_of(usize::from(at)) else { return };
        let envoy = self.pgv_error(usize::from(at), Leaf::Field { message, field, index: index.or(own_index) }, reason);
        self.problem(ProblemKind::Constraint, format!("{}: {reason}", self.describe_short()), Some(envoy), offset);
    }

    /// The field being read, for xdsck's own messages: `port_value` or `filter_chains[2]`.
    pub(super) fn describe_short(&self) -> String {
        let st = self.st.borrow();
        let mut out = String::new();
        for t in st.ptr.iter().rev() {
            match t {
                super::Tok::Key(k, _) => {
                    out.insert_str(0, &format!("`{k}`"));
                    break;
                }
                super::Tok::Index(i) => out.insert_str(0, &format!("[{i}]")),
            }
        }
        if out.is_empty() { "the document".to_owned() } else { out }
    }
}
