//! The route messages xdsck reads, as typed structs deserialized straight from the input's text
//! (strings borrowed from it): what [`super::route`] builds the route model from.
//!
//! They are read through the schema adapter ([`super::envoy_json`]) like every other message,
//! in the listener loader's one pass: by the time a value reaches them it has been judged
//! against Envoy's schema and arrives in its canonical form (a wrapper object as its value, a
//! single value as a list), or as unset when Envoy refuses it, and a field given twice has been
//! joined as Envoy joins it. So these readers look at a value's JSON shape only and take the
//! shapes they know: a string field is set by a string, a bool by a boolean, a message by an
//! object.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::protojson::Str;

/// A JSON value read by its shape: each reader takes the shapes it knows and skips the others
/// (the default of every method).
pub(crate) trait Shallow<'de>: Sized + Default {
    fn string(_: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn boolean(_: bool) -> Self {
        Self::default()
    }
    fn unsigned(_: u64) -> Self {
        Self::default()
    }
    /// A negative integer or a number with a fraction or exponent.
    fn other_number() -> Self {
        Self::default()
    }
    fn null() -> Self {
        Self::default()
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

struct ShallowVisitor<T>(PhantomData<T>);

impl<'de, T: Shallow<'de>> Visitor<'de> for ShallowVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<T, E> {
        Ok(T::boolean(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok(T::unsigned(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        Ok(u64::try_from(v).map_or_else(|_| T::other_number(), T::unsigned))
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::other_number())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
}

/// Implements `Deserialize` for a [`Shallow`] reader.
macro_rules! shallow {
    ($name:ident $(<$lt:lifetime>)? $(, $param:ident)?) => {
        impl<'de $(, $param: Shallow<'de>)?> Deserialize<'de> for $name<$($lt)? $($param)?> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // As an option: the schema reader hands a `null` message over as none (unset),
                // anything else as some.
                d.deserialize_option(ShallowVisitor(PhantomData))
            }
        }
    };
}

/// A string field.
#[derive(Debug, Default)]
pub(crate) struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'de> Shallow<'de> for LStr<'de> {
    fn string(s: Cow<'de, str>) -> Self {
        LStr(Some(s))
    }
}
shallow!(LStr<'de>);

/// A bool field, also as a `BoolValue` wrapper (`{"value": true}`).
#[derive(Debug, Default)]
pub(crate) struct LBool(pub Option<bool>);

impl<'de> Shallow<'de> for LBool {
    fn boolean(b: bool) -> Self {
        LBool(Some(b))
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut out = LBool(None);
        while let Some(k) = map.next_key::<Str<'de>>()? {
            if k.0 == "value" {
                out = map.next_value::<Plain<LBool>>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}
shallow!(LBool);

/// A `uint32` field (or `UInt32Value`): a number, a decimal string, or `{"value": ...}`.
#[derive(Debug, Default)]
pub(crate) struct LU32(pub Option<u32>);

impl<'de> Shallow<'de> for LU32 {
    fn unsigned(n: u64) -> Self {
        LU32(u32::try_from(n).ok())
    }
    fn string(s: Cow<'de, str>) -> Self {
        LU32(s.parse().ok())
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut out = LU32(None);
        while let Some(k) = map.next_key::<Str<'de>>()? {
            if k.0 == "value" {
                out = map.next_value::<LU32>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}
shallow!(LU32);

/// The value inside a wrapper, which is not itself unwrapped again.
#[derive(Debug, Default)]
struct Plain<T>(T);

impl<'de> Shallow<'de> for Plain<LBool> {
    fn boolean(b: bool) -> Self {
        Plain(LBool(Some(b)))
    }
}
impl<'de> Deserialize<'de> for Plain<LBool> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShallowVisitor(PhantomData))
    }
}

/// A message field: set only by an object. Boxed: a raw message has a field for everything
/// xdsck may read, and the schema reader hands each value up through several layers by value;
/// a boxed one moves as a pointer (with a filter chain's boxes, 2.4% fewer instructions for
/// 2k listeners with route tables, 2.3% for the 10k-tenant gateway).
#[derive(Debug)]
pub(crate) struct Obj<T>(pub Option<Box<T>>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<'de, T: Deserialize<'de>> Shallow<'de> for Obj<T> {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(Box::new(t))))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShallowVisitor(PhantomData))
    }
}

/// A repeated field: the elements of a list (anything else reads as empty). Each element keeps
/// its place, as pointers and Envoy's texts count it.
#[derive(Debug)]
pub(crate) struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Shallow<'de> for List<T> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut out = Vec::new();
        while let Some(t) = seq.next_element::<T>()? {
            out.push(t);
        }
        Ok(List(out))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShallowVisitor(PhantomData))
    }
}

/// What a message of a repeated field becomes in the model, made as the list streams past: the
/// raw messages (large: a field for everything xdsck may read) are never held in a list.
pub(crate) trait FromRaw<'a>: Sized {
    type Raw: Deserialize<'a>;
    /// The model of the message at `index` of its list.
    fn from_raw(raw: Self::Raw, index: usize) -> Self;
}

/// A repeated message field read straight into the model: non-object elements are skipped
/// (keeping the others' indices).
#[derive(Debug)]
pub(crate) struct Items<M>(pub Vec<M>);

impl<M> Default for Items<M> {
    fn default() -> Self {
        Items(Vec::new())
    }
}

impl<'de, M: FromRaw<'de>> Shallow<'de> for Items<M> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut out = Vec::new();
        let mut index = 0;
        while let Some(Obj(raw)) = seq.next_element::<Obj<M::Raw>>()? {
            if let Some(raw) = raw {
                out.push(M::from_raw(*raw, index));
            }
            index += 1;
        }
        out.shrink_to_fit();
        Ok(Items(out))
    }
}

impl<'de, M: FromRaw<'de>> Deserialize<'de> for Items<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShallowVisitor(PhantomData))
    }
}

/// A field whose presence is all that is read (`null` included: it was given).
#[derive(Debug, Default)]
pub(crate) struct Given;

impl Shallow<'_> for Given {}
shallow!(Given);

/// A predicate field of a `RouteMatch` xdsck does not evaluate: set unless `null` or an empty
/// list.
#[derive(Debug, Default)]
pub(crate) struct UnevaluatedField(pub bool);

impl<'de> Shallow<'de> for UnevaluatedField {
    fn string(_: Cow<'de, str>) -> Self {
        UnevaluatedField(true)
    }
    fn boolean(_: bool) -> Self {
        UnevaluatedField(true)
    }
    fn unsigned(_: u64) -> Self {
        UnevaluatedField(true)
    }
    fn other_number() -> Self {
        UnevaluatedField(true)
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(UnevaluatedField(true))
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut any = false;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            any = true;
        }
        Ok(UnevaluatedField(any))
    }
}
shallow!(UnevaluatedField);

/// `VirtualHost.require_tls`: 0 none, 1 external only, 2 all (by name or number).
#[derive(Debug, Default)]
pub(crate) struct TlsRequirement(pub u8);

impl<'de> Shallow<'de> for TlsRequirement {
    fn string(s: Cow<'de, str>) -> Self {
        TlsRequirement(match &*s {
            "ALL" => 2,
            "EXTERNAL_ONLY" => 1,
            _ => 0,
        })
    }
    fn unsigned(n: u64) -> Self {
        TlsRequirement(if n <= 2 { n as u8 } else { 0 })
    }
}
shallow!(TlsRequirement);

/// `HttpConnectionManager.codec_type`, by name or number (protobuf JSON takes both); anything
/// else reads as the default, `AUTO`.
#[derive(Debug, Default)]
pub(crate) struct Codec(pub crate::model::route::CodecType);

impl<'de> Shallow<'de> for Codec {
    fn string(s: Cow<'de, str>) -> Self {
        Codec::of(match &*s {
            "HTTP1" => 1,
            "HTTP2" => 2,
            "HTTP3" => 3,
            _ => 0,
        })
    }
    fn unsigned(n: u64) -> Self {
        Codec::of(n)
    }
}
shallow!(Codec);

impl Codec {
    fn of(n: u64) -> Self {
        use crate::model::route::CodecType;
        Codec(match n {
            1 => CodecType::Http1,
            2 => CodecType::Http2,
            3 => CodecType::Http3,
            _ => CodecType::Auto,
        })
    }
}

/// A message read as a `serde_json` map, in the input's order (a redirect's fields, printed as
/// given).
#[derive(Debug, Default)]
pub(crate) struct AnyObject(pub Option<serde_json::Map<String, serde_json::Value>>);

impl<'de> Shallow<'de> for AnyObject {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        serde_json::Map::deserialize(de::value::MapAccessDeserializer::new(map)).map(|m| AnyObject(Some(m)))
    }
}
shallow!(AnyObject);

/// A field as read, and whether its key was the lowerCamelCase spelling (pointers use the
/// input's own spelling).
#[derive(Debug)]
pub(crate) struct Field<T> {
    pub value: T,
    pub camel: bool,
}

/// Declares a route message: each field with its snake_case key and, where it differs, its
/// lowerCamelCase one. `keys: f => extra: T` adds a field `extra` and calls
/// `f(&mut message, key)` for every key, read or not.
macro_rules! route_message {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $( $field:ident : $ty:ty = $snake:literal $(| $camel:literal)? ),* $(,)?
        }
        $(keys: $hook:path => $extra:ident : $ety:ty)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub(crate) struct $name<'a> {
            $( pub $field: Option<Field<$ty>>, )*
            $( pub $extra: $ety, )?
            pub _text: PhantomData<&'a str>,
        }

        impl<'de> Shallow<'de> for $name<'de> {
            fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
                let mut out = Self::default();
                while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
                    $( $hook(&mut out, &key); )?
                    match &*key {
                        $(
                            $snake => out.$field = Some(Field { value: map.next_value()?, camel: false }),
                            $(
                                $camel => {
                                    if matches!(out.$field, Some(Field { camel: false, .. })) {
                                        map.next_value::<IgnoredAny>()?;
                                    } else {
                                        out.$field = Some(Field { value: map.next_value()?, camel: true });
                                    }
                                }
                            )?
                        )*
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        shallow!($name<'de>);
    };
}

/// The value of a field, when given.
pub(crate) fn get<T>(f: &Option<Field<T>>) -> Option<&T> {
    f.as_ref().map(|f| &f.value)
}

/// The value of a field, taken.
pub(crate) fn take<T>(f: Option<Field<T>>) -> Option<T> {
    f.map(|f| f.value)
}

/// A string field's value.
pub(crate) fn string<'a>(f: Option<Field<LStr<'a>>>) -> Option<Cow<'a, str>> {
    f.and_then(|f| f.value.0)
}

/// A bool field's value.
pub(crate) fn boolean(f: &Option<Field<LBool>>) -> Option<bool> {
    get(f).and_then(|b| b.0)
}

/// A message field's value.
pub(crate) fn message<T>(f: Option<Field<Obj<T>>>) -> Option<T> {
    f.and_then(|f| f.value.0).map(|b| *b)
}

/// The key a field was read from: `snake`, or its camel spelling.
pub(crate) fn key_of<T>(f: &Option<Field<T>>, snake: &'static str, camel: &'static str) -> &'static str {
    if f.as_ref().is_some_and(|f| f.camel) { camel } else { snake }
}

route_message! {
    struct RawRds {
        route_config_name: LStr<'a> = "route_config_name" | "routeConfigName",
    }
}

route_message! {
    /// A `RouteConfiguration`.
    struct RawRouteConfiguration {
        name: LStr<'a> = "name",
        virtual_hosts: Items<crate::model::route::VirtualHost<'a>> = "virtual_hosts" | "virtualHosts",
        ignore_port_in_host_matching: LBool = "ignore_port_in_host_matching" | "ignorePortInHostMatching",
        vhds: Given = "vhds",
        validate_clusters: LBool = "validate_clusters" | "validateClusters",
        request_mirror_policies: List<Obj<RawMirror<'a>>> = "request_mirror_policies" | "requestMirrorPolicies",
    }
}

route_message! {
    struct RawVirtualHost {
        name: LStr<'a> = "name",
        domains: List<LStr<'a>> = "domains",
        routes: Items<crate::model::route::Route<'a>> = "routes",
        matcher: Given = "matcher",
        require_tls: TlsRequirement = "require_tls" | "requireTls",
        request_mirror_policies: List<Obj<RawMirror<'a>>> = "request_mirror_policies" | "requestMirrorPolicies",
    }
}

route_message! {
    struct RawRoute {
        name: LStr<'a> = "name",
        r#match: Obj<RawRouteMatch<'a>> = "match",
        route: Obj<RawRouteAction<'a>> = "route",
        redirect: AnyObject = "redirect",
        direct_response: Obj<RawDirectResponse<'a>> = "direct_response" | "directResponse",
        filter_action: Given = "filter_action" | "filterAction",
        non_forwarding_action: Given = "non_forwarding_action" | "nonForwardingAction",
    }
}

route_message! {
    struct RawRouteMatch {
        prefix: LStr<'a> = "prefix",
        path: LStr<'a> = "path",
        safe_regex: Obj<RawRegex<'a>> = "safe_regex" | "safeRegex",
        path_separated_prefix: LStr<'a> = "path_separated_prefix" | "pathSeparatedPrefix",
        connect_matcher: Given = "connect_matcher" | "connectMatcher",
        path_match_policy: Given = "path_match_policy" | "pathMatchPolicy",
        headers: Items<crate::model::route::HeaderMatcher<'a>> = "headers",
        case_sensitive: LBool = "case_sensitive" | "caseSensitive",
        query_parameters: Items<crate::model::route::QueryParameterMatcher<'a>> = "query_parameters" | "queryParameters",
        cookies: UnevaluatedField = "cookies",
        runtime_fraction: UnevaluatedField = "runtime_fraction" | "runtimeFraction",
        grpc: UnevaluatedField = "grpc",
        tls_context: UnevaluatedField = "tls_context" | "tlsContext",
        dynamic_metadata: UnevaluatedField = "dynamic_metadata" | "dynamicMetadata",
        filter_state: UnevaluatedField = "filter_state" | "filterState",
    }
}

route_message! {
    struct RawRegex {
        regex: LStr<'a> = "regex",
    }
}

/// Keeps a header matcher's first key that names a match specifier, for the forms xdsck does
/// not evaluate (`range_match`, ...).
#[allow(clippy::ptr_arg, reason = "the key is kept borrowed from the text: a `&str` would have to be copied")]
fn note_match_key<'a>(h: &mut RawHeaderMatcher<'a>, key: &Cow<'a, str>) {
    if h.match_key.is_none() && (key.ends_with("_match") || key.ends_with("Match")) {
        h.match_key = Some(key.clone());
    }
}

route_message! {
    struct RawHeaderMatcher {
        name: LStr<'a> = "name",
        exact_match: LStr<'a> = "exact_match" | "exactMatch",
        prefix_match: LStr<'a> = "prefix_match" | "prefixMatch",
        suffix_match: LStr<'a> = "suffix_match" | "suffixMatch",
        contains_match: LStr<'a> = "contains_match" | "containsMatch",
        safe_regex_match: Obj<RawRegex<'a>> = "safe_regex_match" | "safeRegexMatch",
        present_match: LBool = "present_match" | "presentMatch",
        string_match: Obj<RawStringMatcher<'a>> = "string_match" | "stringMatch",
        invert_match: LBool = "invert_match" | "invertMatch",
        treat_missing_header_as_empty: LBool = "treat_missing_header_as_empty" | "treatMissingHeaderAsEmpty",
    }
    keys: note_match_key => match_key: Option<Cow<'a, str>>
}

route_message! {
    struct RawQueryParameterMatcher {
        name: LStr<'a> = "name",
        string_match: Obj<RawStringMatcher<'a>> = "string_match" | "stringMatch",
        present_match: LBool = "present_match" | "presentMatch",
    }
}

route_message! {
    struct RawStringMatcher {
        exact: LStr<'a> = "exact",
        prefix: LStr<'a> = "prefix",
        suffix: LStr<'a> = "suffix",
        contains: LStr<'a> = "contains",
        safe_regex: Obj<RawRegex<'a>> = "safe_regex" | "safeRegex",
        ignore_case: LBool = "ignore_case" | "ignoreCase",
    }
}

route_message! {
    struct RawRouteAction {
        cluster: LStr<'a> = "cluster",
        weighted_clusters: Obj<RawWeightedClusters<'a>> = "weighted_clusters" | "weightedClusters",
        cluster_header: LStr<'a> = "cluster_header" | "clusterHeader",
        request_mirror_policies: List<Obj<RawMirror<'a>>> = "request_mirror_policies" | "requestMirrorPolicies",
    }
}

route_message! {
    /// A `RequestMirrorPolicy`: only its cluster is read (for the cluster check).
    struct RawMirror {
        cluster: LStr<'a> = "cluster",
    }
}

route_message! {
    struct RawWeightedClusters {
        clusters: List<Obj<RawClusterWeight<'a>>> = "clusters",
    }
}

route_message! {
    struct RawClusterWeight {
        name: LStr<'a> = "name",
        weight: LU32 = "weight",
    }
}

route_message! {
    struct RawDirectResponse {
        status: LU32 = "status",
        body: Obj<RawDataSource<'a>> = "body",
    }
}

route_message! {
    struct RawDataSource {
        inline_string: LStr<'a> = "inline_string" | "inlineString",
    }
}
