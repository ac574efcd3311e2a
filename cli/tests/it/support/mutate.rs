//! Single-change mutants of a configuration Envoy accepts, for comparing xdsck's schema checks
//! with the real Envoy's: each mutant differs from its seed in one place, chosen at random (but
//! seeded) among the places the schema knows, and in one way chosen among the classes of
//! problem protobuf's parser and PGV find (and a few forms Envoy accepts).

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use xdsck_core::schema::{Card, Field, Kind, MsgId, Schema, Wkt};

/// One place in a configuration the schema knows.
#[derive(Debug, Clone)]
pub struct Site {
    /// JSON pointer of the value.
    pub pointer: String,
    pub what: SiteKind,
}

#[derive(Debug, Clone)]
pub enum SiteKind {
    /// An object of message `.0`.
    Message(MsgId),
    /// The value of field `field` of message `msg`.
    Field { msg: MsgId, field: u16 },
    /// An Any's `@type`.
    TypeUrl,
}

/// Every place of `value` (a message of type `msg`) the schema knows, depth first.
pub fn sites(value: &Value, msg: MsgId) -> Vec<Site> {
    let mut out = Vec::new();
    walk(value, msg, String::new(), &mut out);
    out
}

fn walk(value: &Value, msg: MsgId, pointer: String, out: &mut Vec<Site>) {
    let s = Schema::get();
    let m = s.message(msg);
    let Value::Object(obj) = value else { return };
    if m.wkt == Wkt::Any {
        let Some(url) = obj.get("@type").and_then(Value::as_str) else { return };
        out.push(Site { pointer: format!("{pointer}/@type"), what: SiteKind::TypeUrl });
        if let Some(t) = s.find_type_url(url)
            && s.message(t).wkt == Wkt::None
        {
            walk_fields(obj, t, &pointer, out);
        }
        return;
    }
    if m.wkt != Wkt::None {
        return;
    }
    out.push(Site { pointer: pointer.clone(), what: SiteKind::Message(msg) });
    walk_fields(obj, msg, &pointer, out);
}

fn walk_fields(obj: &Map<String, Value>, msg: MsgId, pointer: &str, out: &mut Vec<Site>) {
    let s = Schema::get();
    let m = s.message(msg);
    if pointer.is_empty() || out.iter().all(|x| x.pointer != pointer) {
        out.push(Site { pointer: pointer.to_owned(), what: SiteKind::Message(msg) });
    }
    for (k, v) in obj {
        if k == "@type" {
            continue;
        }
        let Some((i, f)) = m.field_by_key(k) else { continue };
        let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
        out.push(Site { pointer: p.clone(), what: SiteKind::Field { msg, field: i } });
        let Kind::Message(t) = f.kind else { continue };
        match (f.card, v) {
            (Card::Repeated, Value::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    walk(item, t, format!("{p}/{j}"), out);
                }
            }
            (Card::Map(entry), Value::Object(map)) => {
                if let Kind::Message(vt) = s.message(entry).field(1).kind {
                    for (mk, mv) in map {
                        walk(mv, vt, format!("{p}/{}", mk.replace('~', "~0").replace('/', "~1")), out);
                    }
                }
            }
            (Card::Single, v) => walk(v, t, p, out),
            _ => {}
        }
    }
}

/// A mutant: what was changed, and the new configuration.
#[derive(Debug, Clone)]
pub struct Mutant {
    pub class: &'static str,
    pub pointer: String,
    pub config: Value,
}

/// One seeded mutant of `seed` (a Bootstrap), or `None` when the chosen class does not apply to
/// the chosen place (the caller draws again).
pub fn mutate(seed: &Value, rng: &mut ChaCha8Rng) -> Option<Mutant> {
    let s = Schema::get();
    let bootstrap = s.find("envoy.config.bootstrap.v3.Bootstrap")?;
    let all = sites(seed, bootstrap);
    let site = &all[rng.random_range(0..all.len())];
    let mut config = seed.clone();
    let class = match &site.what {
        SiteKind::Message(m) => mutate_message(&mut config, &site.pointer, *m, rng)?,
        SiteKind::TypeUrl => mutate_type(&mut config, &site.pointer, rng)?,
        SiteKind::Field { msg, field } => mutate_field(&mut config, &site.pointer, *msg, *field, rng)?,
    };
    Some(Mutant { class, pointer: site.pointer.clone(), config })
}

fn at<'v>(config: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    config.pointer_mut(pointer)
}

fn parent_and_key(pointer: &str) -> (&str, String) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    (parent, key.replace("~1", "/").replace("~0", "~"))
}

fn mutate_message(config: &mut Value, pointer: &str, msg: MsgId, rng: &mut ChaCha8Rng) -> Option<&'static str> {
    let s = Schema::get();
    let m = s.message(msg);
    let obj = at(config, pointer)?.as_object_mut()?;
    match rng.random_range(0..3) {
        0 => {
            obj.insert(format!("bogus_field_{}", rng.random_range(0..100)), json!(1));
            Some("unknown key")
        }
        1 => {
            // Drop a field: a required one, a list PGV wants items in, a string it wants set.
            let keys: Vec<String> = obj.keys().filter(|k| *k != "@type").cloned().collect();
            if keys.is_empty() {
                return None;
            }
            let k = &keys[rng.random_range(0..keys.len())];
            obj.remove(k);
            Some("field removed")
        }
        _ => {
            // Another member of a oneof one field of which is set.
            let set: Vec<&Field> = obj.keys().filter_map(|k| m.field_by_key(k).map(|(_, f)| f)).collect();
            let f = set.iter().find(|f| f.oneof.is_some())?;
            let other = m.fields.iter().find(|g| g.oneof == f.oneof && g.name != f.name)?;
            obj.insert(other.name.to_string(), default_json(other));
            Some("second oneof member")
        }
    }
}

fn default_json(f: &Field) -> Value {
    let s = Schema::get();
    if f.card != Card::Single {
        return json!([]);
    }
    match f.kind {
        Kind::Bool => json!(true),
        Kind::String | Kind::Bytes => json!("x"),
        Kind::Enum(_) => json!(0),
        Kind::Message(t) => match s.message(t).wkt {
            Wkt::Duration => json!("1s"),
            Wkt::Wrapper => json!(1),
            _ => json!({}),
        },
        _ => json!(1),
    }
}

fn mutate_type(config: &mut Value, pointer: &str, rng: &mut ChaCha8Rng) -> Option<&'static str> {
    let (parent, _) = parent_and_key(pointer);
    let (holder, key) = parent_and_key(parent);
    match rng.random_range(0..3) {
        0 => {
            *at(config, pointer)? = json!("type.googleapis.com/envoy.extensions.filters.bogus.v3.Nope");
            Some("unknown type URL")
        }
        1 => {
            *at(config, pointer)? = json!("type.googleapis.com/google.protobuf.Empty");
            Some("type URL of no extension")
        }
        _ => {
            // The typed config removed: the extension given by name only.
            if key != "typed_config" && key != "typedConfig" {
                return None;
            }
            at(config, holder)?.as_object_mut()?.remove(&key);
            Some("typed_config removed")
        }
    }
}

fn mutate_field(
    config: &mut Value,
    pointer: &str,
    msg: MsgId,
    field: u16,
    rng: &mut ChaCha8Rng,
) -> Option<&'static str> {
    let s = Schema::get();
    let f = s.message(msg).field(field);
    let (parent, key) = parent_and_key(pointer);
    let class = rng.random_range(0..10);
    if class == 0 {
        // A misspelled key.
        let typo = misspell(&key, rng);
        let obj = at(config, parent)?.as_object_mut()?;
        let v = obj.remove(&key)?;
        obj.insert(typo, v);
        return Some("misspelled key");
    }
    if class == 1 {
        *at(config, pointer)? = Value::Null;
        return Some("null value");
    }
    let value = at(config, pointer)?;
    match (f.card, f.kind) {
        (Card::Repeated, _) if class == 2 => {
            *value = json!([]);
            Some("empty list")
        }
        (Card::Repeated, _) if class == 3 => {
            let one = value.as_array()?.first()?.clone();
            *value = one;
            Some("single value for a list")
        }
        (Card::Repeated, _) => {
            let items = value.as_array_mut()?;
            if items.is_empty() {
                return None;
            }
            let i = rng.random_range(0..items.len());
            mutate_value(&mut items[i], f.kind, rng)
        }
        (Card::Map(_), _) => {
            *value = json!([]);
            Some("list for a map")
        }
        (Card::Single, kind) => mutate_value(value, kind, rng),
    }
}

fn mutate_value(value: &mut Value, kind: Kind, rng: &mut ChaCha8Rng) -> Option<&'static str> {
    let s = Schema::get();
    let pick = rng.random_range(0..6);
    match kind {
        Kind::String => Some(match pick {
            0 => {
                *value = json!(7);
                "number for a string"
            }
            1 => {
                *value = json!("");
                "empty string"
            }
            2 => {
                *value = json!(["a"]);
                "list for a string"
            }
            3 => {
                *value = json!("bad\nvalue with spaces");
                "string with a newline"
            }
            4 => {
                *value = json!({"a": 1});
                "object for a string"
            }
            _ => {
                *value = json!(true);
                "bool for a string"
            }
        }),
        Kind::Bool => Some(match pick {
            0 => {
                *value = json!("yes");
                "bool as a word"
            }
            1 => {
                *value = json!("maybe");
                "bool as a bad word"
            }
            2 => {
                *value = json!(1);
                "number for a bool"
            }
            _ => {
                *value = json!({"value": true});
                "object for a bool"
            }
        }),
        Kind::Enum(e) => {
            let en = s.enumeration(e);
            Some(match pick {
                0 => {
                    *value = json!("NOT_A_VALUE");
                    "unknown enum name"
                }
                1 => {
                    let name = en.values.last().map(|(n, _)| n.to_ascii_lowercase()).unwrap_or_default();
                    *value = json!(name);
                    "enum name in lower case"
                }
                2 => {
                    *value = json!(99);
                    "undefined enum number"
                }
                3 => {
                    *value = json!(en.values.last().map_or(0, |v| v.1));
                    "enum number"
                }
                _ => {
                    *value = json!([1]);
                    "list for an enum"
                }
            })
        }
        Kind::Message(t) => match s.message(t).wkt {
            Wkt::Duration => Some(match pick {
                0 => {
                    *value = json!(5);
                    "duration as a number"
                }
                1 => {
                    *value = json!("5m");
                    "duration in minutes"
                }
                2 => {
                    *value = json!("-5s");
                    "negative duration"
                }
                3 => {
                    *value = json!("1.1234567891s");
                    "duration with ten fraction digits"
                }
                4 => {
                    *value = json!({"seconds": 3, "nanos": 5});
                    "duration as an object"
                }
                _ => {
                    *value = json!("0s");
                    "zero duration"
                }
            }),
            Wkt::Wrapper => {
                let inner = s.message(t).field(0).kind;
                match pick {
                    0 => {
                        let v = value.clone();
                        *value = json!({"value": v});
                        Some("wrapper as an object")
                    }
                    1 => {
                        let v = value.clone();
                        *value = json!({"value": v, "extra": 1});
                        Some("wrapper object with another key")
                    }
                    _ => mutate_value(value, inner, rng),
                }
            }
            Wkt::Any
            | Wkt::Struct
            | Wkt::Value
            | Wkt::ListValue
            | Wkt::Timestamp
            | Wkt::FieldMask
            | Wkt::TypedStruct => {
                *value = json!("x");
                Some("string for a message")
            }
            Wkt::None => Some(match pick {
                0 => {
                    *value = json!("x");
                    "string for a message"
                }
                1 => {
                    *value = json!([]);
                    "list for a message"
                }
                _ => {
                    *value = json!({});
                    "empty message"
                }
            }),
        },
        Kind::Bytes => {
            *value = json!("!!!not base64");
            Some("bad base64")
        }
        Kind::Double | Kind::Float => Some(match pick {
            0 => {
                *value = json!("abc");
                "word for a number"
            }
            1 => {
                *value = json!(-1.5);
                "negative number"
            }
            2 => {
                *value = json!("NaN");
                "NaN"
            }
            _ => {
                *value = json!(1e39);
                "huge number"
            }
        }),
        _ => Some(match pick {
            0 => {
                *value = json!("abc");
                "word for a number"
            }
            1 => {
                *value = json!(-1);
                "negative number"
            }
            2 => {
                *value = json!(4_294_967_296u64);
                "number over 32 bits"
            }
            3 => {
                *value = json!(1.5);
                "fraction for an integer"
            }
            4 => {
                let n = value.as_u64().unwrap_or(1);
                *value = json!(n.to_string());
                "number as a string"
            }
            _ => {
                *value = json!(0);
                "zero"
            }
        }),
    }
}

/// The key with one letter dropped, doubled or swapped with the next.
fn misspell(key: &str, rng: &mut ChaCha8Rng) -> String {
    let mut chars: Vec<char> = key.chars().collect();
    if chars.len() < 2 {
        return format!("{key}x");
    }
    let i = rng.random_range(0..chars.len() - 1);
    match rng.random_range(0..3) {
        0 => {
            chars.remove(i);
        }
        1 => chars.insert(i, chars[i]),
        _ => chars.swap(i, i + 1),
    }
    let typo: String = chars.into_iter().collect();
    if typo == key { format!("{key}x") } else { typo }
}
