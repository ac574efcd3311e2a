//! What RE2 refuses when Envoy compiles a `RegexMatcher.regex` (`safe_regex` of a route, a
//! header, a string matcher), with the text RE2 gives, which is all Envoy prints:
//! `missing ): /api/(v1`.
//!
//! The syntax is read by `regex-syntax` (the regex crate's parser, whose grammar is RE2's with a
//! few additions); this module turns its errors into RE2's and refuses what RE2 lacks. RE2 as
//! Envoy 1.40 runs it reads the pattern as Latin-1 (`\x{100}` is out of range), and limits
//! counted repetitions to 1000, nested ones by their product. Where the two parsers differ and
//! this module cannot tell what RE2 says, it accepts: a wrong error is worse than none here,
//! and docs/schema.md lists what is not checked (RE2's program size among them).

use regex_syntax::ast::parse::ParserBuilder;
use regex_syntax::ast::{
    Ast, ClassSet, ClassSetItem, ErrorKind, Flag, FlagsItemKind, GroupKind, HexLiteralKind, LiteralKind,
    RepetitionKind, RepetitionRange,
};

/// RE2's limit on a counted repetition, and on the product of nested ones.
const MAX_REPEAT: u32 = 1000;

/// RE2's error for `regex`, as Envoy prints it, or `None` when RE2 compiles it.
pub fn refusal(regex: &str) -> Option<String> {
    let ast = ParserBuilder::new().octal(true).nest_limit(1000).build().parse(regex);
    match ast {
        Ok(ast) => walk(&ast, regex, MAX_REPEAT),
        Err(e) => {
            parse_error(regex, e.kind(), &regex[e.span().start.offset..e.span().end.offset], e.span().start.offset)
        }
    }
}

fn parse_error(regex: &str, kind: &ErrorKind, at: &str, start: usize) -> Option<String> {
    let rest = &regex[start..];
    let text = match kind {
        ErrorKind::GroupUnclosed => format!("missing ): {regex}"),
        ErrorKind::GroupUnopened => format!("unexpected ): {regex}"),
        ErrorKind::ClassUnclosed => format!("missing ]: {rest}"),
        ErrorKind::ClassRangeInvalid => format!("invalid character class range: {at}"),
        ErrorKind::RepetitionCountInvalid => format!("invalid repetition size: {at}"),
        // `*a`, `a|*`; `a**` is RE2's "bad repetition operator", told apart by what precedes.
        ErrorKind::RepetitionMissing => {
            let before = regex[..start].chars().next_back();
            match before {
                Some('*' | '+' | '?') => {
                    let op_start = regex[..start].char_indices().next_back().map_or(0, |(i, _)| i);
                    let op_end = start + at.len().max(1);
                    format!("bad repetition operator: {}", &regex[op_start..op_end.min(regex.len())])
                }
                // `(?)`: an empty flag group to RE2.
                Some('(') if rest.starts_with("?)") => return None,
                _ => format!("no argument for repetition operator: {}", first_char(rest)),
            }
        }
        ErrorKind::EscapeUnexpectedEof => match escape_start(regex, start) {
            // `\x4` at the end: a hex escape cut short, not a trailing backslash.
            Some(bs) if regex[bs..].starts_with("\\x") => format!("invalid escape sequence: {}", &regex[bs..]),
            _ => "trailing \\".to_owned(),
        },
        ErrorKind::EscapeUnrecognized | ErrorKind::UnsupportedBackreference => {
            // RE2's own escapes that the regex crate lacks: quoting and any byte.
            if rest.starts_with("\\Q") || rest.starts_with("\\C") {
                return None;
            }
            format!("invalid escape sequence: {}", prefix_chars(rest, 2))
        }
        ErrorKind::EscapeHexInvalidDigit | ErrorKind::EscapeHexEmpty => {
            let bs = escape_start(regex, start)?;
            format!("invalid escape sequence: {}", prefix_chars(&regex[bs..], 4))
        }
        ErrorKind::EscapeHexInvalid => return hex_out_of_range(&regex[escape_start(regex, start)?..]),
        ErrorKind::UnsupportedLookAround => {
            let op = ["(?<=", "(?<!", "(?=", "(?!"].into_iter().find(|p| rest.starts_with(p)).unwrap_or("(?");
            format!("invalid perl operator: {op}")
        }
        ErrorKind::FlagUnrecognized => format!("invalid perl operator: {}", flags_up_to(regex, start, at)),
        ErrorKind::FlagDanglingNegation => {
            let open = regex[..start].rfind("(?").unwrap_or(start);
            let close = regex[start..].find(')').map_or(regex.len(), |i| start + i + 1);
            format!("invalid perl operator: {}", &regex[open..close])
        }
        ErrorKind::GroupNameEmpty => {
            let open = regex[..start].rfind('(').unwrap_or(start);
            format!("invalid named capture group: {}", &regex[open..=start.min(regex.len() - 1)])
        }
        // RE2 takes any word characters as a name (`(?P<1a>x)`), and other characters not.
        ErrorKind::GroupNameInvalid => {
            let open = regex[..start].rfind('(').unwrap_or(start);
            let close = regex[start..].find('>').map(|i| start + i);
            let name_start = regex[open..].find('<').map_or(start, |i| open + i + 1);
            let name = close.map(|c| &regex[name_start..c])?;
            if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            format!("invalid named capture group: {}", &regex[open..=close?])
        }
        // Forms where the regex crate is stricter than RE2 (`a{,3}` and `a{` are literals
        // there, `(?)` an empty group), or that this module cannot word as RE2 does.
        _ => return None,
    };
    Some(text)
}

/// What RE2 refuses in a pattern the regex crate parses.
fn walk(ast: &Ast, regex: &str, budget: u32) -> Option<String> {
    match ast {
        Ast::Flags(f) => flags(&f.flags, regex),
        Ast::Literal(l) => literal(l, regex),
        Ast::ClassBracketed(c) => class_set(&c.kind, regex),
        Ast::Repetition(r) => {
            if let Ast::Repetition(inner) = &*r.ast {
                // `a**`, `a*+`: RE2 takes no repetition of a repetition (`a*?` is one operator).
                let end = r.op.span.end.offset;
                return Some(format!("bad repetition operator: {}", &regex[inner.op.span.start.offset..end]));
            }
            let text = &regex[r.op.span.start.offset..r.op.span.end.offset];
            let mut inner_budget = budget;
            if let RepetitionKind::Range(range) = &r.op.kind {
                let (min, max) = match *range {
                    RepetitionRange::Exactly(n) => (n, Some(n)),
                    RepetitionRange::AtLeast(n) => (n, None),
                    RepetitionRange::Bounded(m, n) => (m, Some(n)),
                };
                if min > MAX_REPEAT || max.is_some_and(|n| n > MAX_REPEAT) {
                    return Some(format!("invalid repetition size: {}", text.trim_end_matches('?')));
                }
                // RE2 divides its budget by each nested count; a path that reaches 0 is too much.
                let n = max.unwrap_or(min);
                if let Some(b) = budget.checked_div(n) {
                    inner_budget = b;
                }
                if (min >= 2 || max.is_some_and(|n| n >= 2)) && nested_budget(&r.ast, inner_budget) == 0 {
                    return Some(format!("invalid repetition size: {}", text.trim_end_matches('?')));
                }
            }
            walk(&r.ast, regex, inner_budget)
        }
        Ast::Group(g) => {
            if let GroupKind::NonCapturing(f) = &g.kind
                && let Some(e) = flags(f, regex)
            {
                return Some(e);
            }
            walk(&g.ast, regex, budget)
        }
        Ast::Alternation(a) => a.asts.iter().find_map(|x| walk(x, regex, budget)),
        Ast::Concat(c) => c.asts.iter().find_map(|x| walk(x, regex, budget)),
        Ast::Empty(_) | Ast::Dot(_) | Ast::Assertion(_) | Ast::ClassUnicode(_) | Ast::ClassPerl(_) => None,
    }
}

/// The smallest budget left on any path below `ast` once each counted repetition divided it.
fn nested_budget(ast: &Ast, budget: u32) -> u32 {
    match ast {
        Ast::Repetition(r) => {
            let mut b = budget;
            if let RepetitionKind::Range(range) = &r.op.kind {
                let n = match *range {
                    RepetitionRange::Exactly(n) | RepetitionRange::AtLeast(n) => n,
                    RepetitionRange::Bounded(_, n) => n,
                };
                if let Some(d) = b.checked_div(n) {
                    b = d;
                }
            }
            nested_budget(&r.ast, b)
        }
        Ast::Group(g) => nested_budget(&g.ast, budget),
        Ast::Alternation(a) => a.asts.iter().map(|x| nested_budget(x, budget)).min().unwrap_or(budget),
        Ast::Concat(c) => c.asts.iter().map(|x| nested_budget(x, budget)).min().unwrap_or(budget),
        _ => budget,
    }
}

/// RE2's flags are `i`, `m`, `s` and `U`; the regex crate adds `u`, `R` and `x`.
fn flags(f: &regex_syntax::ast::Flags, regex: &str) -> Option<String> {
    for item in &f.items {
        if let FlagsItemKind::Flag(Flag::Unicode | Flag::CRLF | Flag::IgnoreWhitespace) = item.kind {
            let open = regex[..f.span.start.offset].rfind("(?").unwrap_or(f.span.start.offset);
            return Some(format!("invalid perl operator: {}", &regex[open..item.span.end.offset]));
        }
    }
    None
}

fn literal(l: &regex_syntax::ast::Literal, regex: &str) -> Option<String> {
    let text = &regex[l.span.start.offset..l.span.end.offset];
    match l.kind {
        // `\1`..`\7` alone are back references to RE2, which it does not have.
        LiteralKind::Octal if text.len() == 2 && text.as_bytes()[1] != b'0' => {
            Some(format!("invalid escape sequence: {text}"))
        }
        LiteralKind::HexFixed(HexLiteralKind::UnicodeShort | HexLiteralKind::UnicodeLong)
        | LiteralKind::HexBrace(HexLiteralKind::UnicodeShort | HexLiteralKind::UnicodeLong) => {
            Some(format!("invalid escape sequence: {}", prefix_chars(text, 2)))
        }
        LiteralKind::HexBrace(HexLiteralKind::X) if u32::from(l.c) > 0xFF => hex_out_of_range(text),
        _ => None,
    }
}

fn class_set(set: &ClassSet, regex: &str) -> Option<String> {
    match set {
        ClassSet::Item(item) => class_item(item, regex),
        ClassSet::BinaryOp(op) => {
            // `&&`, `--`, `~~` are the regex crate's; to RE2 they are characters.
            class_set(&op.lhs, regex).or_else(|| class_set(&op.rhs, regex))
        }
    }
}

fn class_item(item: &ClassSetItem, regex: &str) -> Option<String> {
    match item {
        ClassSetItem::Literal(l) => literal(l, regex),
        ClassSetItem::Range(r) => literal(&r.start, regex).or_else(|| literal(&r.end, regex)),
        ClassSetItem::Bracketed(b) => class_set(&b.kind, regex),
        ClassSetItem::Union(u) => u.items.iter().find_map(|i| class_item(i, regex)),
        _ => None,
    }
}

/// `\x{...}` beyond Latin-1: RE2 stops at the digit that took the value past 0xFF.
fn hex_out_of_range(text: &str) -> Option<String> {
    let digits = text.strip_prefix("\\x{")?;
    let mut value = 0u32;
    for (i, c) in digits.char_indices() {
        let d = c.to_digit(16)?;
        value = value.saturating_mul(16).saturating_add(d);
        if value > 0xFF {
            return Some(format!("invalid escape sequence: \\x{{{}", &digits[..=i]));
        }
    }
    None
}

/// Where the escape holding offset `at` starts: the backslash at or before it.
fn escape_start(regex: &str, at: usize) -> Option<usize> {
    regex[..(at + 1).min(regex.len())].rfind('\\')
}

/// The flags group up to and including the flag RE2 refuses: `(?z`.
fn flags_up_to(regex: &str, start: usize, at: &str) -> String {
    let open = regex[..start].rfind("(?").unwrap_or(start);
    let end = (start + at.len().max(1)).min(regex.len());
    regex[open..end].to_owned()
}

fn first_char(s: &str) -> &str {
    s.char_indices().nth(1).map_or(s, |(i, _)| &s[..i])
}

fn prefix_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// `pattern` (RE2 syntax) with RE2's Perl classes written out as the classes RE2 means by them,
/// for an engine of the regex crate's family, whose `\s` also takes `\v` (and, in Unicode mode,
/// every Unicode space, as its `\d` and `\w` take every script's digits and letters): `\d` is
/// `[0-9]`, `\w` `[0-9A-Za-z_]` and `\s` `[\t\n\f\r ]` to RE2. `None` for what has no such
/// writing the engines share (a negated class inside brackets, `\b`, case folding, Unicode
/// classes): the caller then matches the pattern as written.
pub(crate) fn for_engine(pattern: &str) -> Option<String> {
    // Without octal escapes, which the engines do not read either: what is printed parses again.
    let mut ast = ParserBuilder::new().build().parse(pattern).ok()?;
    ascii_classes(&mut ast)?;
    Some(ast.to_string())
}

/// The literals and ranges RE2 means by a Perl class.
fn perl_items(p: &regex_syntax::ast::ClassPerl) -> Vec<ClassSetItem> {
    use regex_syntax::ast::{ClassPerlKind, ClassSetRange, Literal};
    let lit = |c: char| Literal { span: p.span, kind: LiteralKind::HexFixed(HexLiteralKind::X), c };
    let range = |a: char, b: char| ClassSetItem::Range(ClassSetRange { span: p.span, start: lit(a), end: lit(b) });
    match p.kind {
        ClassPerlKind::Digit => vec![range('0', '9')],
        ClassPerlKind::Word => {
            vec![range('0', '9'), range('A', 'Z'), range('a', 'z'), ClassSetItem::Literal(lit('_'))]
        }
        ClassPerlKind::Space => {
            ['\t', '\n', '\x0c', '\r', ' '].into_iter().map(|c| ClassSetItem::Literal(lit(c))).collect()
        }
    }
}

fn ascii_classes(ast: &mut Ast) -> Option<()> {
    use regex_syntax::ast::{AssertionKind, ClassBracketed, ClassSetUnion};
    match ast {
        Ast::ClassPerl(p) => {
            let kind = ClassSet::Item(ClassSetItem::Union(ClassSetUnion { span: p.span, items: perl_items(p) }));
            *ast = Ast::class_bracketed(ClassBracketed { span: p.span, negated: p.negated, kind });
            Some(())
        }
        Ast::ClassBracketed(c) => class_set_ascii(&mut c.kind),
        Ast::Repetition(r) => ascii_classes(&mut r.ast),
        Ast::Group(g) => {
            if let GroupKind::NonCapturing(f) = &g.kind
                && f.items.iter().any(|i| matches!(i.kind, FlagsItemKind::Flag(Flag::CaseInsensitive)))
            {
                return None;
            }
            ascii_classes(&mut g.ast)
        }
        Ast::Alternation(a) => a.asts.iter_mut().try_for_each(ascii_classes),
        Ast::Concat(c) => c.asts.iter_mut().try_for_each(ascii_classes),
        Ast::Flags(f) if f.flags.items.iter().any(|i| matches!(i.kind, FlagsItemKind::Flag(Flag::CaseInsensitive))) => {
            None
        }
        Ast::Assertion(a)
            if !matches!(
                a.kind,
                AssertionKind::StartLine | AssertionKind::EndLine | AssertionKind::StartText | AssertionKind::EndText
            ) =>
        {
            None
        }
        Ast::ClassUnicode(_) => None,
        Ast::Empty(_) | Ast::Dot(_) | Ast::Flags(_) | Ast::Literal(_) | Ast::Assertion(_) => Some(()),
    }
}

fn class_set_ascii(set: &mut ClassSet) -> Option<()> {
    match set {
        ClassSet::BinaryOp(op) => {
            class_set_ascii(&mut op.lhs)?;
            class_set_ascii(&mut op.rhs)
        }
        ClassSet::Item(item) => class_item_ascii(item),
    }
}

fn class_item_ascii(item: &mut ClassSetItem) -> Option<()> {
    use regex_syntax::ast::ClassSetUnion;
    match item {
        // In a union its items join the union's (a negated one would need a nested class).
        ClassSetItem::Perl(p) if !p.negated => {
            *item = ClassSetItem::Union(ClassSetUnion { span: p.span, items: perl_items(p) });
            Some(())
        }
        ClassSetItem::Perl(_) | ClassSetItem::Unicode(_) => None,
        ClassSetItem::Bracketed(b) => class_set_ascii(&mut b.kind),
        ClassSetItem::Union(u) => u.items.iter_mut().try_for_each(class_item_ascii),
        ClassSetItem::Empty(_) | ClassSetItem::Literal(_) | ClassSetItem::Range(_) | ClassSetItem::Ascii(_) => Some(()),
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    /// Each pattern with what Envoy 1.40 printed for it (`--mode validate`, a route's
    /// `safe_regex`), or `None` where it accepted the pattern.
    #[test]
    fn texts_are_re2s() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/api/(v1", Some("missing ): /api/(v1")),
            ("/api/[a", Some("missing ]: [a")),
            ("\\Z", Some("invalid escape sequence: \\Z")),
            ("a{1001}", Some("invalid repetition size: {1001}")),
            ("a**", Some("bad repetition operator: **")),
            ("a*+", Some("bad repetition operator: *+")),
            ("a+?", None),
            ("a??", None),
            ("\\8", Some("invalid escape sequence: \\8")),
            ("\\1", Some("invalid escape sequence: \\1")),
            ("\\0", None),
            ("\\012", None),
            ("/x(?=a)", Some("invalid perl operator: (?=")),
            ("/x(?!a)", Some("invalid perl operator: (?!")),
            ("/x(?<=a)", Some("invalid perl operator: (?<=")),
            ("a{2,1}", Some("invalid repetition size: {2,1}")),
            ("[z-a]", Some("invalid character class range: z-a")),
            ("\\pN", None),
            ("(?x)a b", Some("invalid perl operator: (?x")),
            ("\\Qa.b\\E", None),
            ("\\C", None),
            ("a\\z", None),
            ("\\<a", None),
            ("\\b{start}", None),
            ("[[:alpha:]]", None),
            ("(?P<1a>x)", None),
            ("(?P<>x)", Some("invalid named capture group: (?P<>")),
            ("(?<n>a)", None),
            ("a{,3}", None),
            ("a{", None),
            ("a{x}", None),
            ("*a", Some("no argument for repetition operator: *")),
            ("+", Some("no argument for repetition operator: +")),
            ("a|*", Some("no argument for repetition operator: *")),
            ("()", None),
            ("(?i)abc", None),
            ("(?s).", None),
            ("(?m)^a", None),
            ("(?U)a+", None),
            ("(?-i)a", None),
            ("(?i-)a", Some("invalid perl operator: (?i-)")),
            ("(?)", None),
            ("(?z)a", Some("invalid perl operator: (?z")),
            ("\\x{110000}", Some("invalid escape sequence: \\x{110")),
            ("\\xZZ", Some("invalid escape sequence: \\xZZ")),
            ("\\x4", Some("invalid escape sequence: \\x4")),
            ("\\e", Some("invalid escape sequence: \\e")),
            ("\\a\\f\\t\\n\\r\\v", None),
            ("a\\", Some("trailing \\")),
            ("[a", Some("missing ]: [a")),
            ("[]a]", None),
            ("[^]a]", None),
            ("[\\d-z]", None),
            ("\\d\\s\\w\\D\\S\\W", None),
            ("[^\\x00-\\x{10FFFF}]", Some("invalid escape sequence: \\x{10F")),
            ("(a)(b)(c)", None),
            ("a{0}", None),
            ("(?:a{1000}){1000}", Some("invalid repetition size: {1000}")),
            (".*", None),
            ("\\.\\/\\-\\!\\:\\@", None),
            ("/a)", Some("unexpected ): /a)")),
            ("^/api/v1/users/[0-9]+/orders/[a-z0-9-]+$", None),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter(|(re, want)| refusal(re).as_deref() != *want)
            .map(|(re, want)| format!("{re:?}: want {want:?}, got {:?}", refusal(re)))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
