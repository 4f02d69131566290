//! Timestamps: millisecond instants, parsed from RFC 3339 and rendered the API's one way.

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An instant with millisecond precision (milliseconds since the Unix epoch, UTC).
///
/// The API renders every timestamp as `YYYY-MM-DDThh:mm:ss.sssZ`, so instants are kept at
/// exactly that precision: what is ordered on is what clients see.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Stamp(i64);

/// Change tracking of `updated_at` starts on this date: records edited before it report
/// `updated_at` equal to `created_at` (spec, "Shared conventions").
pub const CHANGE_TRACKING_START: Stamp = Stamp(1_786_579_200_000); // 2026-08-13T00:00:00Z

/// The `updated_at` a record reports: change tracking starts on 2026-08-13, so an edit
/// stamped before then reports `created_at` (spec, "Shared conventions").
pub fn reported_updated_at(created_at: Stamp, updated_at: Stamp) -> Stamp {
    if updated_at < CHANGE_TRACKING_START {
        created_at
    } else {
        updated_at
    }
}

impl Stamp {
    pub const MIN: Stamp = Stamp(i64::MIN);
    pub const MAX: Stamp = Stamp(i64::MAX);

    pub const fn from_millis(ms: i64) -> Self {
        Stamp(ms)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    pub fn now() -> Self {
        Stamp(Utc::now().timestamp_millis())
    }

    pub fn next(self) -> Self {
        Stamp(self.0.saturating_add(1))
    }

    /// Parses RFC 3339 with a mandatory zone (the snapshot format). Sub-millisecond digits
    /// are truncated.
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| Stamp(d.timestamp_millis()))
    }

    pub fn to_datetime(self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.0)
            .single()
            .unwrap_or_else(|| Utc.timestamp_millis_opt(0).unwrap())
    }

    /// Writes `YYYY-MM-DDThh:mm:ss.sssZ` into `buf` without allocating. This runs for
    /// every timestamp of every record rendered, so it is plain integer arithmetic
    /// (days to civil date after Howard Hinnant's `civil_from_days`) and digits two at a
    /// time from a table.
    pub fn write_iso(self, buf: &mut [u8; 24]) -> &str {
        self.write_iso_ascii(buf);
        std::str::from_utf8(&buf[..]).expect("ASCII")
    }

    /// [`Self::write_iso`] as bytes (ASCII), for writers that need no `str`.
    pub fn write_iso_ascii(self, buf: &mut [u8; 24]) {
        const PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
        fn two(buf: &mut [u8; 24], at: usize, v: u32) {
            let i = 2 * v as usize;
            buf[at] = PAIRS[i];
            buf[at + 1] = PAIRS[i + 1];
        }
        let days = self.0.div_euclid(86_400_000);
        let ms_of_day = self.0.rem_euclid(86_400_000) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        if !(0..=9999).contains(&y) {
            // Outside four-digit years the fixed layout does not fit; say so plainly.
            buf.copy_from_slice(b"0000-01-01T00:00:00.000Z");
            return;
        }
        let (y, m, d) = (y as u32, m as u32, d as u32);
        two(buf, 0, y / 100);
        two(buf, 2, y % 100);
        buf[4] = b'-';
        two(buf, 5, m);
        buf[7] = b'-';
        two(buf, 8, d);
        buf[10] = b'T';
        two(buf, 11, ms_of_day / 3_600_000);
        buf[13] = b':';
        two(buf, 14, ms_of_day / 60_000 % 60);
        buf[16] = b':';
        two(buf, 17, ms_of_day / 1000 % 60);
        buf[19] = b'.';
        let ms = ms_of_day % 1000;
        buf[20] = b'0' + (ms / 100) as u8;
        two(buf, 21, ms % 100);
        buf[23] = b'Z';
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 24];
        f.write_str(self.write_iso(&mut buf))
    }
}

impl Serialize for Stamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 24];
        s.serialize_str(self.write_iso(&mut buf))
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Stamp::parse_rfc3339(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid timestamp {s:?}: expected RFC 3339 with a timezone"
            ))
        })
    }
}

/// A calendar date, `YYYY-MM-DD` exactly.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Date(NaiveDate);

impl Date {
    /// Accepts exactly `YYYY-MM-DD` (four-digit year, two-digit month and day).
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        if !b
            .iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        {
            return None;
        }
        NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().map(Date)
    }
}

impl Stamp {
    /// The calendar day (UTC) this instant falls on.
    pub fn date(self) -> Date {
        Date(
            chrono::DateTime::from_timestamp_millis(self.0)
                .expect("a stamp is a representable instant")
                .date_naive(),
        )
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Date::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("invalid date {s:?}: expected YYYY-MM-DD"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_millisecond_utc() {
        let s = Stamp::parse_rfc3339("2026-10-02T09:05:12.345678+01:00").unwrap();
        assert_eq!(s.to_string(), "2026-10-02T08:05:12.345Z");
    }

    #[test]
    fn tracking_start_is_2026_08_13() {
        assert_eq!(
            Stamp::parse_rfc3339("2026-08-13T00:00:00Z").unwrap(),
            CHANGE_TRACKING_START
        );
    }

    proptest::proptest! {
        #[test]
        fn rendering_matches_chrono(ms in 0i64..253_402_300_799_999) {
            let want = Stamp(ms).to_datetime().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            proptest::prop_assert_eq!(Stamp(ms).to_string(), want);
        }
    }

    #[test]
    fn date_is_strict() {
        assert!(Date::parse("2026-10-05").is_some());
        for bad in [
            "2026-1-05",
            "2026-13-01",
            "20261005",
            " 2026-10-05",
            "2026-02-30",
        ] {
            assert!(Date::parse(bad).is_none(), "{bad}");
        }
    }
}
