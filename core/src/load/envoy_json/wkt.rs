//! The well-known types' string forms as protobuf's JSON parser reads them (`ParseDuration`,
//! `ParseTimestamp`), and the check Envoy runs on every Duration after parsing.

use crate::schema::rules::Dur;

const MAX_SECONDS: i64 = 3_652_500 * 86_400;

/// `ParseDuration`: `"1.5s"`, `"-2s"`, `"0.000000001s"`.
pub(crate) fn parse_duration(s: &str) -> Result<Dur, &'static str> {
    let int_end = s.bytes().take_while(|&c| c.is_ascii_digit() || c == b'-').count();
    if int_end == 0 {
        return Err("duration must start with an integer");
    }
    let digits = &s[..int_end];
    let seconds = super::scalar::simple_atoi_i64(digits).ok_or("duration had bad seconds")?;
    if !(-MAX_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err("duration out of range");
    }
    let mut rest = &s[int_end..];
    let mut nanos = take_nanos(&mut rest).ok_or("duration had bad nanoseconds")?;
    if seconds < 0 || digits.starts_with('-') {
        nanos = -nanos;
    }
    if rest != "s" {
        return Err("duration must end with a single 's'");
    }
    Ok(Dur { seconds, nanos })
}

/// `TakeNanosAndAdvance`: an optional `.` and one to nine digits, as nanoseconds.
fn take_nanos(rest: &mut &str) -> Option<i32> {
    let mut nanos = 0i32;
    let mut digits = 0;
    if let Some(after) = rest.strip_prefix('.') {
        digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        nanos = after[..digits].parse().ok()?;
        *rest = &after[digits..];
    }
    for _ in digits..9 {
        nanos *= 10;
    }
    Some(nanos)
}

/// `ParseTimestamp`: RFC 3339 with a `Z` or `+hh:mm` offset.
pub(crate) fn parse_timestamp(s: &str) -> Result<(), &'static str> {
    if s.len() < 20 {
        return Err("timestamp string too short");
    }
    let mut data = s;
    let mut take = |max: usize, end: &str, what: &'static str, nonzero: bool| -> Result<u32, &'static str> {
        let n = data.bytes().take_while(u8::is_ascii_digit).count();
        if n > max || !data[n..].starts_with(end) {
            return Err(what);
        }
        let v: u32 = data[..n].parse().unwrap_or(0);
        if nonzero && v == 0 {
            return Err(what);
        }
        data = &data[n + end.len()..];
        Ok(v)
    };
    take(4, "-", "bad year in timestamp", true)?;
    take(2, "-", "bad month in timestamp", true)?;
    take(2, "T", "bad day in timestamp", true)?;
    take(2, ":", "bad hours in timestamp", false)?;
    take(2, ":", "bad minutes in timestamp", false)?;
    take(2, "", "bad seconds in timestamp", false)?;
    take_nanos(&mut data).ok_or("timestamp had bad nanoseconds")?;
    if data.is_empty() {
        return Err("timestamp missing timezone offset");
    }
    match data.as_bytes()[0] {
        b'-' | b'+' => {
            if data.len() != 6 {
                return Err("timestamp offset of wrong size.");
            }
            let off = &data[1..];
            let ok = off.len() == 5
                && off.as_bytes()[2] == b':'
                && off[..2].bytes().all(|b| b.is_ascii_digit())
                && off[3..].bytes().all(|b| b.is_ascii_digit());
            if !ok {
                return Err("timestamp offset has bad hours and minutes");
            }
            Ok(())
        }
        b'Z' if data.len() == 1 => Ok(()),
        _ => Err("bad timezone offset"),
    }
}

/// Envoy's own check of every Duration after parsing (`validateDurationUnifiedNoThrow`, with
/// `strict_duration_validation` on as in 1.40), with the text it throws: `Invalid duration: ...`
/// followed by protobuf's debug string of the message.
pub(crate) fn envoy_duration_check(d: Dur) -> Option<String> {
    // (INT64_MAX - 999999999) / 1e9: beyond it Envoy's nanosecond arithmetic would overflow.
    const ENVOY_MAX_SECONDS: i64 = (i64::MAX - 999_999_999) / 1_000_000_000;
    let reason = if d.seconds < 0 || d.nanos < 0 {
        "Expected positive duration"
    } else if d.seconds > 315_576_000_000 || d.nanos > 999_999_999 {
        "Duration out-of-range according to Protobuf"
    } else if d.seconds > ENVOY_MAX_SECONDS {
        "Duration out-of-range"
    } else {
        return None;
    };
    // Written only for a refused duration: every duration of a run passes here.
    let debug = if d.nanos == 0 {
        format!("seconds: {}", d.seconds)
    } else if d.seconds == 0 {
        format!("nanos: {}", d.nanos)
    } else {
        format!("seconds: {} nanos: {}", d.seconds, d.nanos)
    };
    Some(format!("Invalid duration: {reason}: {debug}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_protobuf_reads_them() {
        assert_eq!(parse_duration("1.5s"), Ok(Dur { seconds: 1, nanos: 500_000_000 }));
        assert_eq!(parse_duration("-1.5s"), Ok(Dur { seconds: -1, nanos: -500_000_000 }));
        assert_eq!(parse_duration("-0.5s"), Ok(Dur { seconds: 0, nanos: -500_000_000 }));
        assert_eq!(parse_duration("5"), Err("duration must end with a single 's'"));
        assert_eq!(parse_duration("s"), Err("duration must start with an integer"));
        assert_eq!(parse_duration("1.s"), Err("duration had bad nanoseconds"));
        assert_eq!(parse_duration("1.1234567891s"), Err("duration had bad nanoseconds"));
        assert_eq!(parse_duration("315576000001s"), Err("duration out of range"));
        assert_eq!(parse_duration("1-2s"), Err("duration had bad seconds"));
    }

    #[test]
    fn envoy_refuses_negative_and_huge_durations() {
        assert_eq!(
            envoy_duration_check(Dur { seconds: -5, nanos: 0 }).as_deref(),
            Some("Invalid duration: Expected positive duration: seconds: -5")
        );
        assert_eq!(
            envoy_duration_check(Dur { seconds: 5, nanos: 2_000_000_000 }).as_deref(),
            Some("Invalid duration: Duration out-of-range according to Protobuf: seconds: 5 nanos: 2000000000")
        );
        assert_eq!(
            envoy_duration_check(Dur { seconds: 315_576_000_000, nanos: 500_000_000 }).as_deref(),
            Some("Invalid duration: Duration out-of-range: seconds: 315576000000 nanos: 500000000")
        );
        assert_eq!(envoy_duration_check(Dur { seconds: 5, nanos: 0 }), None);
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("2026-11-30T23:04:37.214Z"), Ok(()));
        assert_eq!(parse_timestamp("2026-11-30T23:04:37+01:00"), Ok(()));
        assert_eq!(parse_timestamp("2026-11-30 23:04:37Z"), Err("bad day in timestamp"));
        assert_eq!(parse_timestamp("2026-11-30T23:04:37"), Err("timestamp string too short"));
    }
}
