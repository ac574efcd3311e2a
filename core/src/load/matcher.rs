//! `filter_chain_matcher` from proto3 JSON (snake_case or lowerCamelCase) into the typed model
//! ([`crate::model::matcher`]), read once per listener.

use crate::source::{Pointer, join_index, join_token};
use std::net::IpAddr;

use ipnet::IpNet;
use serde_json::{Map, Value};

use crate::model::Casing;
use crate::model::matcher::{
    FilterChainMatcher, MatchInput, Matcher, MatcherAction, OnMatch, Predicate, RangeMatcher, ServerNameMatcherParts,
    StringMatch, StringMatcher, Then, Tree,
};

/// Reads a matcher, `offset` being where its object starts in the source's JSON text.
pub(crate) fn read(value: &Value, offset: Option<usize>) -> FilterChainMatcher {
    let mut parts = Parts::default();
    parts.scan(value, String::new(), None);
    FilterChainMatcher {
        tree: matcher(value, &Pointer::root()),
        actions: parts.actions,
        server_name_matchers: parts.server_name_matchers,
        offset,
    }
}

/// The value of a field, spelled either way.
pub(crate) fn field<'v>(obj: &'v Map<String, Value>, snake: &str) -> Option<&'v Value> {
    obj.get(snake).or_else(|| obj.get(&*Casing::Camel.field(snake)))
}

/// The message name of an `Any`: `type.googleapis.com/a.b.C` → `a.b.C`.
pub(crate) fn type_name(any: &Value) -> Option<&str> {
    let url = any.get("@type")?.as_str()?;
    Some(url.rsplit('/').next().unwrap_or(url))
}

fn object<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| format!("{what} is not an object"))
}

fn boolean(obj: &Map<String, Value>, snake: &str) -> bool {
    match field(obj, snake) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(w)) => w.get("value").and_then(Value::as_bool).unwrap_or(false),
        _ => false,
    }
}

/// A field's value, spelled either way, and its pointer below `at` as the input spells it.
fn field_at<'v>(obj: &'v Map<String, Value>, snake: &str, at: &Pointer) -> Option<(&'v Value, Pointer)> {
    keyed(obj, snake).map(|(k, v)| (v, at.join(k)))
}

/// The items of a list field, each with its pointer.
fn items_at<'v>(obj: &'v Map<String, Value>, snake: &str, at: &Pointer) -> Option<Vec<(&'v Value, Pointer)>> {
    let (list, at) = field_at(obj, snake, at)?;
    Some(list.as_array()?.iter().enumerate().map(|(i, v)| (v, at.join_index(i))).collect())
}

fn matcher(v: &Value, at: &Pointer) -> Result<Matcher, String> {
    let obj = object(v, "a matcher")?;
    let on_no_match = match field_at(obj, "on_no_match", at) {
        Some((m, at)) => Some(Box::new(on_match(m, &at)?)),
        None => None,
    };
    let tree = if let Some((list, list_at)) = field_at(obj, "matcher_list", at) {
        let list = object(list, "matcher_list")?;
        let items = items_at(list, "matchers", &list_at).ok_or("matcher_list has no matchers")?;
        let mut out = Vec::with_capacity(items.len());
        for (item, item_at) in items {
            let item = object(item, "a field matcher")?;
            let p = field(item, "predicate").ok_or("a field matcher has no predicate")?;
            let (m, m_at) = field_at(item, "on_match", &item_at).ok_or("a field matcher has no on_match")?;
            out.push((predicate(p)?, on_match(m, &m_at)?));
        }
        Tree::List(out)
    } else if let Some((t, t_at)) = field_at(obj, "matcher_tree", at) {
        tree(object(t, "matcher_tree")?, &t_at)?
    } else {
        return Err("a matcher has neither matcher_list nor matcher_tree".to_owned());
    };
    Ok(Matcher { tree, on_no_match, at: at.clone() })
}

fn tree(t: &Map<String, Value>, at: &Pointer) -> Result<Tree, String> {
    let input = input(field(t, "input").ok_or("matcher_tree has no input")?)?;
    let map = |m: &Value, at: &Pointer| -> Result<Vec<(String, OnMatch)>, String> {
        let m = object(m, "a match map")?;
        let (entries, at) = field_at(m, "map", at).ok_or("a match map has no map")?;
        let entries = entries.as_object().ok_or("a match map has no map")?;
        entries.iter().map(|(k, v)| Ok((k.clone(), on_match(v, &at.join(k))?))).collect()
    };
    if let Some((m, m_at)) = field_at(t, "exact_match_map", at) {
        return Ok(Tree::Exact { input, map: map(m, &m_at)? });
    }
    if let Some((m, m_at)) = field_at(t, "prefix_match_map", at) {
        return Ok(Tree::Prefix { input, map: map(m, &m_at)? });
    }
    let (custom, custom_at) = field_at(t, "custom_match", at)
        .ok_or("matcher_tree has no exact_match_map, prefix_match_map or custom_match")?;
    let (config, config_at) = field_at(object(custom, "custom_match")?, "typed_config", &custom_at)
        .ok_or("custom_match has no typed_config")?;
    let cfg = object(config, "custom_match typed_config")?;
    match type_name(config) {
        Some("xds.type.matcher.v3.ServerNameMatcher") => {
            let mut domain_matchers = Vec::new();
            for (dm, dm_at) in items_at(cfg, "domain_matchers", &config_at).into_iter().flatten() {
                let dm = object(dm, "a domain matcher")?;
                let domains = field(dm, "domains")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|d| d.as_str().map(str::to_owned).ok_or("a domain is not a string"))
                    .collect::<Result<Vec<_>, _>>()?;
                let (m, m_at) = field_at(dm, "on_match", &dm_at).ok_or("a domain matcher has no on_match")?;
                domain_matchers.push((domains, on_match(m, &m_at)?));
            }
            Ok(Tree::ServerName { input, domain_matchers })
        }
        Some("xds.type.matcher.v3.IPMatcher") => {
            let mut range_matchers = Vec::new();
            for (rm, rm_at) in items_at(cfg, "range_matchers", &config_at).into_iter().flatten() {
                let rm = object(rm, "a range matcher")?;
                let mut ranges = Vec::new();
                for r in field(rm, "ranges").and_then(Value::as_array).into_iter().flatten() {
                    ranges.push(cidr(object(r, "a range")?)?);
                }
                let (m, m_at) = field_at(rm, "on_match", &rm_at).ok_or("a range matcher has no on_match")?;
                let on_match = on_match(m, &m_at)?;
                range_matchers.push(RangeMatcher { ranges, exclusive: boolean(rm, "exclusive"), on_match });
            }
            Ok(Tree::Ip { input, range_matchers })
        }
        other => Err(format!("custom_match {} is not supported", other.unwrap_or("(no @type)"))),
    }
}

fn cidr(r: &Map<String, Value>) -> Result<IpNet, String> {
    let addr = field(r, "address_prefix").and_then(Value::as_str).unwrap_or_default();
    let ip: IpAddr = addr.parse().map_err(|_| format!("malformed IP address: {addr}"))?;
    let len = match field(r, "prefix_len") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| format!("bad prefix_len {n}"))?,
        Some(Value::String(s)) => s.parse().map_err(|_| format!("bad prefix_len {s:?}"))?,
        Some(Value::Object(w)) => w.get("value").and_then(Value::as_u64).unwrap_or(0),
        Some(other) => return Err(format!("bad prefix_len {other}")),
    };
    let len = u8::try_from(len).map_err(|_| format!("prefix_len {len} is out of range"))?;
    IpNet::new(ip, len).map(|n| n.trunc()).map_err(|_| format!("prefix_len {len} is out of range for {addr}"))
}

fn input(v: &Value) -> Result<MatchInput, String> {
    let config = v.get("typed_config").or_else(|| v.get("typedConfig")).ok_or("an input has no typed_config")?;
    let name = type_name(config).ok_or("an input has no @type")?;
    MatchInput::from_type_name(name)
}

fn on_match(v: &Value, at: &Pointer) -> Result<OnMatch, String> {
    let obj = object(v, "on_match")?;
    let keep_matching = boolean(obj, "keep_matching");
    if let Some((m, m_at)) = field_at(obj, "matcher", at) {
        return Ok(OnMatch { then: Then::Matcher(Box::new(matcher(m, &m_at)?)), keep_matching, at: at.clone() });
    }
    let action = field(obj, "action").ok_or("on_match has neither matcher nor action")?;
    let config = field(object(action, "action")?, "typed_config").ok_or("an action has no typed_config")?;
    match type_name(config) {
        Some("google.protobuf.StringValue") => {
            let name = config.get("value").and_then(Value::as_str).unwrap_or_default();
            Ok(OnMatch { then: Then::Action(name.to_owned()), keep_matching, at: at.clone() })
        }
        other => Err(format!(
            "action {} is not a filter chain name (google.protobuf.StringValue)",
            other.unwrap_or("(no @type)")
        )),
    }
}

fn predicate(v: &Value) -> Result<Predicate, String> {
    let obj = object(v, "a predicate")?;
    if let Some(s) = field(obj, "single_predicate") {
        let s = object(s, "single_predicate")?;
        let input = input(field(s, "input").ok_or("single_predicate has no input")?)?;
        let vm =
            field(s, "value_match").ok_or("single_predicate has no value_match (custom_match is not supported)")?;
        let vm = object(vm, "value_match")?;
        let ignore_case = boolean(vm, "ignore_case");
        for (key, kind) in [
            ("exact", StringMatch::Exact),
            ("prefix", StringMatch::Prefix),
            ("suffix", StringMatch::Suffix),
            ("contains", StringMatch::Contains),
        ] {
            if let Some(p) = vm.get(key) {
                let pattern = p.as_str().ok_or_else(|| format!("value_match.{key} is not a string"))?.to_owned();
                return Ok(Predicate::Single { input, matcher: StringMatcher { kind, pattern, ignore_case } });
            }
        }
        return Err("value_match: only exact, prefix, suffix and contains are supported".to_owned());
    }
    let list = |key: &str| -> Result<Option<Vec<Predicate>>, String> {
        let Some(l) = field(obj, key) else { return Ok(None) };
        let preds = field(object(l, key)?, "predicate")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{key} has no predicate list"))?;
        preds.iter().map(predicate).collect::<Result<_, _>>().map(Some)
    };
    if let Some(p) = list("or_matcher")? {
        return Ok(Predicate::Or(p));
    }
    if let Some(p) = list("and_matcher")? {
        return Ok(Predicate::And(p));
    }
    if let Some(n) = field(obj, "not_matcher") {
        return Ok(Predicate::Not(Box::new(predicate(n)?)));
    }
    Err("a predicate has none of single_predicate, or_matcher, and_matcher, not_matcher".to_owned())
}

// (relative to the matcher, spelled as the input spells them). Tolerant of what `parse` refuses,
// so one unsupported branch does not hide the rest.

// Every action and every ServerNameMatcher, with JSON pointers (relative to the matcher, spelled
// as the input spells them). Tolerant of what `matcher` refuses, so one unsupported branch does
// not hide the rest from the checks.

#[derive(Default)]
struct Parts {
    actions: Vec<MatcherAction>,
    server_name_matchers: Vec<ServerNameMatcherParts>,
}

/// The key an object spells a field with, and its value.
fn keyed<'v>(obj: &'v Map<String, Value>, snake: &str) -> Option<(&'v str, &'v Value)> {
    obj.get_key_value(snake).or_else(|| obj.get_key_value(&*Casing::Camel.field(snake))).map(|(k, v)| (k.as_str(), v))
}

impl Parts {
    fn scan(&mut self, v: &Value, pointer: String, key: Option<&str>) {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.scan(item, join_index(&pointer, i), None);
                }
            }
            Value::Object(obj) => {
                if key == Some("action") {
                    if let Some((k, config)) = keyed(obj, "typed_config") {
                        if type_name(config) == Some("google.protobuf.StringValue") {
                            let name = config.get("value").and_then(Value::as_str).unwrap_or_default();
                            self.actions.push(MatcherAction {
                                name: name.to_owned(),
                                pointer: join_token(&join_token(&pointer, k), "value").into(),
                            });
                        }
                    }
                }
                if let Some((ck, custom)) = keyed(obj, "custom_match") {
                    let config = custom.as_object().and_then(|c| keyed(c, "typed_config"));
                    if let Some((tk, config)) =
                        config.filter(|(_, c)| type_name(c) == Some("xds.type.matcher.v3.ServerNameMatcher"))
                    {
                        let reads_server_name = field(obj, "input")
                            .and_then(|i| i.get("typed_config").or_else(|| i.get("typedConfig")))
                            .and_then(type_name)
                            .is_some_and(|t| t.ends_with(".network.v3.ServerNameInput"));
                        let base = join_token(&join_token(&pointer, ck), tk);
                        let mut domain_matchers = Vec::new();
                        if let Some((dk, Value::Array(dms))) =
                            config.as_object().and_then(|c| keyed(c, "domain_matchers"))
                        {
                            for (i, dm) in dms.iter().enumerate() {
                                let dm_pointer = format!("{}/{i}", join_token(&base, dk));
                                let mut domains = Vec::new();
                                if let Some((dsk, Value::Array(ds))) = dm.as_object().and_then(|d| keyed(d, "domains"))
                                {
                                    for (j, d) in ds.iter().enumerate() {
                                        if let Some(d) = d.as_str() {
                                            domains.push((
                                                d.to_owned(),
                                                format!("{}/{j}", join_token(&dm_pointer, dsk)).into(),
                                            ));
                                        }
                                    }
                                }
                                domain_matchers.push(domains);
                            }
                        }
                        self.server_name_matchers.push(ServerNameMatcherParts { reads_server_name, domain_matchers });
                    }
                }
                for (k, child) in obj {
                    if k != "@type" {
                        self.scan(child, join_token(&pointer, k), Some(k));
                    }
                }
            }
            _ => {}
        }
    }
}
