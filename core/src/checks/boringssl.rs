//! What BoringSSL, Envoy's TLS library, refuses of the text a TLS context gives it: PEM with no
//! block to read, and object identifiers `OBJ_txt2obj` does not parse. Only what is certain from
//! the text: a PEM text with blocks is not decoded (its base64 and DER are BoringSSL's to judge),
//! and an object name (`commonName`, `msUPN`) is looked up in BoringSSL's table, which xdsck
//! does not have. Checked against envoy 1.40 `--mode validate`.

/// Whether a PEM text has no line BoringSSL's `PEM_read_bio` takes for the start of a block
/// (`-----BEGIN NAME-----`, trailing whitespace ignored): then reading any block from it fails
/// with `NO_START_LINE`, whatever block it was to hold.
pub(crate) fn pem_has_no_block(text: &str) -> bool {
    !text.lines().any(|line| {
        let line = line.trim_end_matches(|c: char| c <= ' ');
        line.len() > 16 && line.starts_with("-----BEGIN ") && line.ends_with("-----")
    })
}

/// Whether BoringSSL's `OBJ_txt2obj` refuses an OID in its dotted form (`1.3.6.1.4.1.311.20.2.3`):
/// at least two arcs of decimal digits without leading zeros, each within 64 bits, the first 0,
/// 1 or 2, and the second below 40 when the first is 0 or 1. `None` for a text that starts with
/// a letter: it may be an object's short or long name, which xdsck cannot judge. A text that is
/// empty, starts with neither a digit nor a letter, or holds a control character is no name
/// either: refused.
pub(crate) fn oid_refused(text: &str) -> Option<bool> {
    if text.chars().any(char::is_control) {
        return Some(true);
    }
    match text.chars().next() {
        Some(c) if c.is_ascii_digit() => {}
        Some(c) if c.is_ascii_alphabetic() => return None,
        _ => return Some(true),
    }
    let mut arcs = Vec::new();
    for arc in text.split('.') {
        let digits = !arc.is_empty() && arc.bytes().all(|b| b.is_ascii_digit());
        if !digits || (arc.len() > 1 && arc.starts_with('0')) {
            return Some(true);
        }
        match arc.parse::<u64>() {
            Ok(n) => arcs.push(n),
            Err(_) => return Some(true),
        }
    }
    Some(arcs.len() < 2 || arcs[0] > 2 || (arcs[0] < 2 && arcs[1] >= 40))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_blocks_as_boringssl_finds_them() {
        assert!(pem_has_no_block("bad\nvalue with spaces"));
        assert!(pem_has_no_block(""));
        assert!(pem_has_no_block("-----BEGIN CERTIFICATE"));
        assert!(!pem_has_no_block("junk\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"));
        assert!(!pem_has_no_block("-----BEGIN PRIVATE KEY-----  \r\n"));
    }

    #[test]
    fn oids_as_envoy_1_40_took_them() {
        // Each verdict is what `--mode validate` said of an OTHER_NAME matcher with that oid.
        for ok in ["1.2", "1.39", "2.999", "0.0", "1.2.840.113549", "1.3.6.1.4.1.311.20.2.3"] {
            assert_eq!(oid_refused(ok), Some(false), "{ok}");
        }
        for refused in [
            "",
            "1",
            "3.1",
            "1.40",
            "1.2.3.",
            " 1.2",
            "01.2",
            "1.02",
            "1.2.99999999999999999999",
            "1..2",
            "1.2 ",
            "1.-2",
            "bad\nvalue",
        ] {
            assert_eq!(oid_refused(refused), Some(true), "{refused:?}");
        }
        for name in ["CN", "commonName", "rsaEncryption", "msUPN", "emailAddress"] {
            assert_eq!(oid_refused(name), None, "{name}");
        }
    }
}
