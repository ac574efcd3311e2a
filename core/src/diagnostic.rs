//! What xdsck says: findings about a configuration, and problems reading an input. Both are
//! [`Diagnostic`]s so every renderer handles them alike.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::model::{OneOrList, Text};
use crate::short_list::push_short;
use crate::source::Location;

/// Severity has one fixed meaning (README, "What it finds"):
/// `Error` — Envoy 1.40 rejects this listener or config;
/// `Warning` — Envoy accepts it, but connections will be lost or misrouted;
/// `Info` — legal and deliberate-looking, worth knowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Legal and deliberate-looking, worth knowing.
    Info,
    /// Envoy accepts it, but connections are lost or misrouted.
    Warning,
    /// Envoy rejects the listener or configuration.
    Error,
}

impl Severity {
    /// The lower-case name the outputs and `--severity` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fixed description of a rule: the checks' findings (`XDS1xx`…) and the input problems
/// (`XDS0xx`). `xdsck rules` and `xdsck explain` print these.
#[derive(Debug)]
pub struct Rule {
    /// Stable code, e.g. `XDS101`.
    pub code: &'static str,
    /// Stable kebab-case name, e.g. `duplicate-filter-chain-match`.
    pub name: &'static str,
    /// What every finding of the rule is reported as, unless a `--severity` override says
    /// otherwise.
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// Markdown with the headings *What it finds*, *Why it matters*, *Example*, *Fix*:
    /// [`Rule::explanation`] reads it.
    pub explanation: Explanation,
    /// The code its findings are fingerprinted under: the rule's own, or, for a rule split off
    /// another, the code its findings had before, so that baselines and SARIF fingerprints
    /// keep matching them (`codes::aliases` names the splits).
    pub fingerprint: &'static str,
}

impl Rule {
    /// The rule's explanation (Markdown).
    pub fn explanation(&self) -> &str {
        self.explanation.text()
    }
}

/// A rule's explanation: the Markdown as written; in the web page deflated by `core/build.rs`
/// (the 61 explanations are some 70 KB of the page's download, a third of that deflated) and
/// inflated the first time it is read.
pub struct Explanation {
    #[cfg(not(target_arch = "wasm32"))]
    text: &'static str,
    #[cfg(target_arch = "wasm32")]
    deflated: &'static [u8],
    #[cfg(target_arch = "wasm32")]
    text: std::sync::OnceLock<Box<str>>,
}

impl Explanation {
    /// The Markdown itself.
    #[cfg(not(target_arch = "wasm32"))]
    pub const fn new(text: &'static str) -> Self {
        Explanation { text }
    }

    /// The Markdown, deflated.
    #[cfg(target_arch = "wasm32")]
    pub const fn deflated(deflated: &'static [u8]) -> Self {
        Explanation { deflated, text: std::sync::OnceLock::new() }
    }

    fn text(&self) -> &str {
        #[cfg(not(target_arch = "wasm32"))]
        return self.text;
        #[cfg(target_arch = "wasm32")]
        return self.text.get_or_init(|| {
            let bytes = miniz_oxide::inflate::decompress_to_vec(self.deflated).expect("build.rs deflated it");
            String::from_utf8(bytes).expect("an explanation is UTF-8").into_boxed_str()
        });
    }
}

impl std::fmt::Debug for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Explanation").field(&self.text()).finish()
    }
}

/// The [`Explanation`] of the Markdown file `$file` beside the file that declares the rule.
#[cfg(not(target_arch = "wasm32"))]
macro_rules! explanation {
    ($file:literal) => {
        $crate::diagnostic::Explanation::new(include_str!($file))
    };
}
#[cfg(target_arch = "wasm32")]
macro_rules! explanation {
    ($file:literal) => {
        $crate::diagnostic::Explanation::deflated(include_bytes!(concat!(
            env!("OUT_DIR"),
            "/explanations/",
            $file,
            ".deflate"
        )))
    };
}
pub(crate) use explanation;

/// The rule a check (or any other source of findings) reports under.
/// `declare_rule! { pub static RULE for TheCheck = { ... } }` implements it, so each check names
/// its rule once, where it declares it.
pub trait HasRule {
    /// The rule every finding of this check carries.
    fn rule(&self) -> &'static Rule;
}

/// Declares a [`Rule`] whose explanation is a Markdown file beside the declaring file, so the
/// prose reads and diffs as Markdown rather than as one escaped line. The path is resolved like
/// `include_str!` at the call site. `static RULE for TheCheck` also implements
/// [`HasRule`] for the check. The summary becomes the static's doc comment.
///
/// ```text
/// declare_rule! {
///     pub static RULE for NoFilterChains = {
///         code: "XDS106",
///         name: "no-filter-chains",
///         severity: Severity::Error,
///         summary: "A listener has no filter_chains and no default_filter_chain; Envoy rejects it.",
///         explanation: "no_filter_chains.md",
///     }
/// }
/// ```
macro_rules! declare_rule {
    (
        $(#[$meta:meta])*
        $vis:vis static $ident:ident for $check:ty = { $($fields:tt)* }
    ) => {
        $crate::diagnostic::declare_rule! { $(#[$meta])* $vis static $ident = { $($fields)* } }
        impl $crate::diagnostic::HasRule for $check {
            fn rule(&self) -> &'static $crate::diagnostic::Rule {
                &$ident
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis static $ident:ident = {
            code: $code:literal,
            name: $name:literal,
            severity: $severity:expr,
            summary: $summary:literal,
            explanation: $explanation:literal $(,)?
        }
    ) => {
        $crate::diagnostic::declare_rule! {
            $(#[$meta])*
            $vis static $ident = {
                code: $code,
                name: $name,
                severity: $severity,
                summary: $summary,
                explanation: $explanation,
                fingerprint: $code,
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis static $ident:ident = {
            code: $code:literal,
            name: $name:literal,
            severity: $severity:expr,
            summary: $summary:literal,
            explanation: $explanation:literal,
            fingerprint: $fingerprint:literal $(,)?
        }
    ) => {
        // The rule's summary is its doc: a public rule (the loaders' `XDS0xx`) is documented by
        // what `xdsck rules` says of it, not by a second text that could drift from it.
        #[doc = concat!("`", $code, "` `", $name, "`: ", $summary)]
        $(#[$meta])*
        $vis static $ident: $crate::diagnostic::Rule = $crate::diagnostic::Rule {
            code: $code,
            name: $name,
            severity: $severity,
            summary: $summary,
            explanation: $crate::diagnostic::explanation!($explanation),
            fingerprint: $fingerprint,
        };
    };
}
pub(crate) use declare_rule;

/// A secondary place: "first defined here", "the wildcard chain".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    /// What this place is to the finding, e.g. "the first listener with this name". Mostly
    /// a rule's fixed words: not copied into every one of 100k findings. Two words (`Text`):
    /// a place is 64 bytes, jemalloc's 64-byte class (with `Cow`'s three, 72 in the 80-byte one).
    pub message: Text<'static>,
    /// Where it is.
    pub location: Location,
}

/// A line shown under a finding's message: words made for the finding, a rule's fixed words,
/// or the two, the fixed ones last (`the wildcard terminates TLS and 'a' passes TLS through:
/// Cilium 1.19.6 and later mark ...`). The fixed words are the rule's, not copied into each of
/// 100k findings (a fifth of such a finding's bytes). Shown, serialized and compared as one
/// string, however it is held.
#[derive(Debug, Clone)]
pub struct Note {
    /// Two words (`Text`), not `Cow`'s three: a finding's two notes are 64 bytes, not 80.
    head: Text<'static>,
    tail: &'static str,
}

impl Note {
    /// Words made for the finding, then the rule's fixed words.
    pub fn joined(head: String, tail: &'static str) -> Self {
        Note { head: fitted_text(head), tail }
    }

    /// The line, borrowed when it is one piece.
    pub fn text(&self) -> Cow<'_, str> {
        match self.tail {
            "" => Cow::Borrowed(&self.head),
            tail => Cow::Owned([&*self.head, tail].concat()),
        }
    }

    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.head.bytes().chain(self.tail.bytes())
    }
}

impl<T: Into<Cow<'static, str>>> From<T> for Note {
    fn from(text: T) -> Self {
        Note { head: static_text(text.into()), tail: "" }
    }
}

/// Words held with a finding as two words (`Text`): a rule's fixed ones borrowed, made ones
/// without spare room.
fn static_text(text: Cow<'static, str>) -> Text<'static> {
    match text {
        Cow::Borrowed(s) => Text::borrowed(s),
        Cow::Owned(s) => fitted_text(s),
    }
}

fn fitted_text(text: String) -> Text<'static> {
    Text::owned(fitted(text))
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.head)?;
        f.write_str(self.tail)
    }
}

impl serde::Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Joined first and written as one string: serde_json's `collect_str` (escaping as the
        // `Display` writes) cost 0.3% of a 10k-tenant run's instructions, the copy nothing seen.
        s.serialize_str(&self.text())
    }
}

impl PartialEq for Note {
    fn eq(&self, other: &Note) -> bool {
        self.head.len() + self.tail.len() == other.head.len() + other.tail.len() && self.bytes().eq(other.bytes())
    }
}

impl Eq for Note {}

/// What few findings have, boxed in a [`Diagnostic`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Rare {
    envoy_error: Option<String>,
    proxy: Option<String>,
    example: BTreeMap<&'static str, serde_json::Value>,
}

/// The [`Rare`] fields of a finding that has none.
static NONE_RARE: Rare = Rare { envoy_error: None, proxy: None, example: BTreeMap::new() };

/// One thing xdsck says about an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The rule that found it.
    pub rule: &'static Rule,
    /// The severity of this finding; the rule's default unless the check decided otherwise.
    pub severity: Severity,
    /// One sentence that stands on its own (JSON, SARIF and GitHub show it without the other
    /// fields).
    pub message: String,
    /// What few findings have ([`Self::envoy_error`], [`Self::proxy`], [`Self::example`]),
    /// boxed together: a word here instead of nine (a tenant-scale run holds 100k findings,
    /// none with any of them, until they are written).
    rare: Option<Box<Rare>>,
    /// The listener it is about, when there is one (input problems have none). A `Box<str>`,
    /// two words: its room is its length, as the message's.
    pub listener: Option<Box<str>>,
    /// The chains it is about, by name (or `filter_chains[i]` for an unnamed one): the usual
    /// one held in place (`OneOrList`), as the usual one place below.
    pub filter_chains: OneOrList<String>,
    /// Where it is; `None` only for a place no input has (a failure reported before loading).
    pub location: Option<Location>,
    /// Other places that explain it: the earlier duplicate, the chain that wins. The usual one
    /// held in place: 64 bytes here, not a list's 24 and its 64 elsewhere.
    pub related: OneOrList<Related>,
    /// Extra lines shown under the message: what Envoy actually does, how to fix it. Mostly a
    /// rule's fixed words: not copied into every one of 100k findings.
    pub notes: Vec<Note>,
}

impl Diagnostic {
    /// A finding of `rule` at the rule's severity, to be completed with the builder methods below.
    pub fn new(rule: &'static Rule, message: impl Into<String>) -> Self {
        Self {
            rule,
            severity: rule.severity,
            message: fitted(message.into()),
            rare: None,
            listener: None,
            filter_chains: OneOrList::default(),
            location: None,
            related: OneOrList::default(),
            notes: Vec::new(),
        }
    }

    /// Where the finding is.
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Overrides the rule's severity (selection settings do this; checks do not, since each rule
    /// has one).
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// The text Envoy prints when it rejects this, verbatim, so the conformance test can compare
    /// it. (This builder and [`Self::with_example`] say `with_`: their getters have the
    /// fields' names.)
    pub fn with_envoy_error(mut self, text: impl Into<String>) -> Self {
        self.rare_mut().envoy_error = Some(text.into());
        self
    }

    /// Says which proxy of a peer's output the finding is in (known once the findings of every
    /// input are in).
    pub fn set_proxy(&mut self, proxy: impl Into<String>) {
        self.rare_mut().proxy = Some(proxy.into());
    }

    /// The listener the finding is about.
    pub fn listener(mut self, name: impl Into<String>) -> Self {
        self.listener = Some(name.into().into_boxed_str());
        self
    }

    /// Adds a chain the finding is about.
    pub fn chain(mut self, name: impl Into<String>) -> Self {
        self.filter_chains.push(name.into());
        self
    }

    /// Adds a secondary place.
    pub fn related(mut self, message: impl Into<Cow<'static, str>>, location: Location) -> Self {
        self.related.push(Related { message: static_text(message.into()), location });
        self
    }

    /// Adds a line shown under the message.
    pub fn note(mut self, note: impl Into<Note>) -> Self {
        push_short(&mut self.notes, note.into());
        self
    }

    /// Adds one attribute of the connection that shows the problem (`sni`, `dst_port`, ...).
    pub fn with_example(mut self, key: &'static str, value: impl Into<serde_json::Value>) -> Self {
        self.rare_mut().example.insert(key, value.into());
        self
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_default()
    }

    fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(&NONE_RARE)
    }

    /// The message Envoy prints when it rejects this (severity `Error` only).
    pub fn envoy_error(&self) -> Option<&str> {
        self.rare().envoy_error.as_deref()
    }

    /// The proxy of a peer's output it is in (`default/eg-7c9d`: `egctl`'s namespace/pod), when
    /// the input is a map of several.
    pub fn proxy(&self) -> Option<&str> {
        self.rare().proxy.as_deref()
    }

    /// A concrete connection that shows the problem (`dst_ip`, `dst_port`, `sni`, ...).
    pub fn example(&self) -> &BTreeMap<&'static str, serde_json::Value> {
        &self.rare().example
    }

    /// The rule's code, e.g. `XDS101`.
    pub fn code(&self) -> &'static str {
        self.rule.code
    }

    /// A stable identity for a finding across runs, so a baseline and code scanning can tell a
    /// finding that moved from a new one: its rule, listener and chains, and where it is below
    /// the chain it names (`/filter_chain_match/server_names/2`). Line numbers and where the
    /// listener sits in its input (`/configs/2/dynamic_listeners/7`) are left out, so
    /// reformatting, reordering listeners or moving them to another file keeps it; a finding
    /// that names no listener (an input problem) is identified by its pointer. A rule split off
    /// another fingerprints under the code it left, so an accepted finding stays accepted.
    /// FNV-1a, spelled out, because std's hasher may change between Rust releases.
    pub fn fingerprint(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |s: &str| {
            for b in s.bytes().chain([0]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        // A finding that moved to a rule split off another keeps the fingerprint it had.
        feed(self.rule.fingerprint);
        let pointer = self.location.as_ref().map_or("", |l| l.pointer.as_str());
        match &self.listener {
            Some(listener) => {
                feed(listener);
                for chain in &self.filter_chains {
                    feed(chain);
                }
                feed(below_chain(pointer));
            }
            None => feed(pointer),
        }
        format!("{h:016x}")
    }

    /// Total order used for output: by place, then code, then message, so the same input always
    /// gives the same bytes.
    pub fn sort_key(&self) -> impl Ord + '_ {
        (
            self.location.as_ref().map(|l| (l.source, l.offset, l.pointer.as_str())),
            self.rule.code,
            self.message.as_str(),
            &self.filter_chains,
        )
    }
}

/// A finding's text with no spare room: one built with `write!` holds up to twice its length,
/// and a tenant-scale run holds 100k findings until they are written.
fn fitted(mut text: String) -> String {
    text.shrink_to_fit();
    text
}

/// The part of a pointer below the last filter chain it goes through (`""` when it goes
/// through none): what stays the same when listeners are reordered.
fn below_chain(pointer: &str) -> &str {
    // Each token with the offset of the `/` before it.
    let tokens: Vec<(usize, &str)> =
        pointer.match_indices('/').map(|(i, _)| (i, pointer[i + 1..].split('/').next().unwrap_or_default())).collect();
    let mut cut = None;
    for (k, (_, token)) in tokens.iter().enumerate() {
        // `filter_chains` is followed by the chain's index; what is below that stays.
        let skip = match *token {
            "filter_chains" | "filterChains" => 2,
            "default_filter_chain" | "defaultFilterChain" => 1,
            _ => continue,
        };
        cut = Some(tokens.get(k + skip).map_or(pointer.len(), |&(start, _)| start));
    }
    cut.map_or("", |c| &pointer[c..])
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
    }
}

impl Eq for Rule {}

#[cfg(test)]
mod tests {
    use super::{Diagnostic, Note, below_chain};

    /// A tenant-scale run holds 100k findings until they are written: the rare fields are a
    /// word (they were nine), and a finding without them reads them as unset; its one chain and
    /// its one place are held in place (224 bytes, not 256 and two allocations of 32 and 64);
    /// its notes and places hold their words in two words each.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn a_finding_holds_its_rare_fields_in_a_box_it_makes_when_one_is_set() {
        assert_eq!(std::mem::size_of::<Diagnostic>(), 224);
        // A note and a place are held two words a text: 32 and 64 bytes, not 40 and 72.
        assert_eq!(std::mem::size_of::<Note>(), 32);
        assert_eq!(std::mem::size_of::<super::Related>(), 64);
        let rule = crate::codes::ALL[0].rule;
        let plain = Diagnostic::new(rule, "m");
        assert_eq!((plain.envoy_error(), plain.proxy(), plain.example().len()), (None, None, 0));
        assert!(plain.rare.is_none());
        let mut full =
            Diagnostic::new(rule, "m").with_envoy_error("e").with_example("sni", "a").with_example("sni", "b");
        full.set_proxy("p");
        assert_eq!((full.envoy_error(), full.proxy()), (Some("e"), Some("p")));
        assert_eq!(full.example().get("sni"), Some(&serde_json::Value::from("b")));
        assert_ne!(plain, full);
    }

    #[test]
    fn a_joined_note_is_shown_and_serialized_as_one_string() {
        let joined = Note::joined("the wildcard terminates TLS and 'a' passes".to_owned(), " TLS through: \"quoted\"");
        let whole = "the wildcard terminates TLS and 'a' passes TLS through: \"quoted\"";
        assert_eq!(joined.to_string(), whole);
        assert_eq!(joined.text(), whole);
        // Equal to the same line held in one piece or cut elsewhere.
        assert_eq!(joined, Note::from(whole));
        assert_eq!(
            joined,
            Note::joined("the wildcard terminates TLS and 'a' passes TLS".to_owned(), " through: \"quoted\"")
        );
        assert_ne!(joined, Note::joined(whole.to_owned(), "."));
        // The same bytes as the string itself, escapes included, in every serialization.
        assert_eq!(serde_json::to_string(&joined).unwrap(), serde_json::to_string(whole).unwrap());
        assert_eq!(serde_json::to_string_pretty(&[&joined]).unwrap(), serde_json::to_string_pretty(&[whole]).unwrap());
        // A note of one piece borrows its words.
        let fixed = Note::from("Envoy sends each exact name to its own chain");
        assert!(matches!(fixed.text(), std::borrow::Cow::Borrowed(_)));
        assert_eq!(serde_json::to_string(&fixed).unwrap(), "\"Envoy sends each exact name to its own chain\"");
    }

    #[test]
    fn the_part_below_the_chain_is_kept() {
        assert_eq!(
            below_chain(
                "/configs/2/dynamic_listeners/1/active_state/listener/filter_chains/3/filter_chain_match/server_names/0"
            ),
            "/filter_chain_match/server_names/0"
        );
        assert_eq!(below_chain("/spec/resources/0/filterChains/1"), "");
        assert_eq!(below_chain("/default_filter_chain/filters/0"), "/filters/0");
        assert_eq!(below_chain("/static_resources/listeners/0/address"), "");
    }
}
