//! Millisecond UTC timestamps in the RFC 3339 form Tinode uses on the wire (`2015-10-06T18:07:29.841Z`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Milliseconds since the Unix epoch, UTC. Serialised as RFC 3339 with exactly three fraction digits,
/// because `tinode-sdk` only turns 20–24 character strings into `Date` objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

/// A timestamp string that is not RFC 3339.
#[derive(Debug, thiserror::Error)]
#[error("invalid timestamp {0:?}")]
pub struct TimestampParseError(String);

impl Timestamp {
    /// Milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`.
    pub fn parse(s: &str) -> Result<Self, TimestampParseError> {
        parse_rfc3339(s).ok_or_else(|| TimestampParseError(s.to_owned()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(f, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", sod / 3600, (sod / 60) % 60, sod % 60)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Howard Hinnant's days-to-civil algorithm: proleptic Gregorian, valid for every i64 day we will meet.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        if frac.is_empty() {
            return None;
        }
        let padded: String = frac.chars().chain("000".chars()).take(3).collect();
        ms = padded.parse().ok()?;
    }
    let offset_min = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let v = oh * 60 + om;
            if *sign == b'-' { -v } else { v }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(Timestamp(secs * 1000 + ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds() {
        assert_eq!(Timestamp(1_444_154_849_841).to_string(), "2015-10-06T18:07:29.841Z");
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn parses_what_it_formats_and_offsets() {
        for ms in [0, 1_444_155_249_841, 951_782_400_000, 4_102_444_800_123] {
            let t = Timestamp(ms);
            assert_eq!(Timestamp::parse(&t.to_string()).unwrap(), t);
        }
        assert_eq!(Timestamp::parse("2015-10-06T20:07:29.8+02:00").unwrap(), Timestamp(1_444_154_849_800));
        assert!(Timestamp::parse("2015-13-06T20:07:29Z").is_err());
        assert!(Timestamp::parse("yesterday").is_err());
    }
}
