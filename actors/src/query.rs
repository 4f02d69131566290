//! List parameters, parsed once into values that are valid wherever they go:
//! `limit`, `updated_since` and the opaque `cursor`.

use crate::model::Entity;
use crate::signing::{Signer, SEAL_LEN};
use crate::time::Stamp;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use std::sync::Arc;
use uuid::Uuid;

/// A page size: plain decimal digits, at least 1, clamped to the endpoint's maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit(usize);

impl Limit {
    /// `raw` must be plain ASCII digits (no sign, space, point or exponent) and >= 1;
    /// values above `max` are clamped to `max`.
    pub fn parse(raw: &str, max: usize) -> Result<Limit, String> {
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "limit must be a whole number written with digits only, got {raw:?}"
            ));
        }
        let trimmed = raw.trim_start_matches('0');
        if trimmed.is_empty() {
            return Err("limit must be at least 1".into());
        }
        // More digits than any usize holds is simply "above the maximum".
        let n = trimmed.parse::<usize>().unwrap_or(usize::MAX);
        Ok(Limit(n.min(max)))
    }

    pub fn new(n: usize) -> Limit {
        Limit(n.max(1))
    }

    pub fn get(self) -> usize {
        self.0
    }
}

pub const UPDATED_SINCE_FORMAT: &str =
    "YYYY-MM-DD, optionally followed by Thh:mm, Thh:mm:ss or Thh:mm:ss.sss (a space may replace T), optionally followed by Z or ±hh:mm";

/// Parses `updated_since` exactly as the spec allows; a value without a zone is UTC.
pub fn parse_updated_since(raw: &str) -> Result<Stamp, String> {
    parse_since_inner(raw.as_bytes()).ok_or_else(|| {
        format!("updated_since {raw:?} is not a valid timestamp: expected {UPDATED_SINCE_FORMAT}")
    })
}

fn two(b: &[u8], at: usize) -> Option<u32> {
    let d = b.get(at..at + 2)?;
    d.iter()
        .all(u8::is_ascii_digit)
        .then(|| ((d[0] - b'0') * 10 + (d[1] - b'0')) as u32)
}

fn parse_since_inner(b: &[u8]) -> Option<Stamp> {
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    if !b[..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let year: i32 = std::str::from_utf8(&b[..4]).ok()?.parse().ok()?;
    let date = NaiveDate::from_ymd_opt(year, two(b, 5)?, two(b, 8)?)?;
    let mut i = 10;
    let mut time = NaiveTime::MIN;
    if i < b.len() && (b[i] == b'T' || b[i] == b' ') {
        let h = two(b, i + 1)?;
        if b.get(i + 3) != Some(&b':') {
            return None;
        }
        let m = two(b, i + 4)?;
        i += 6;
        let (mut s, mut ms) = (0, 0);
        if b.get(i) == Some(&b':') {
            s = two(b, i + 1)?;
            i += 3;
            if b.get(i) == Some(&b'.') {
                let frac = b.get(i + 1..i + 4)?;
                if !frac.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                ms = frac.iter().fold(0u32, |a, d| a * 10 + (d - b'0') as u32);
                i += 4;
            }
        }
        time = NaiveTime::from_hms_milli_opt(h, m, s, ms)?;
        if s > 59 {
            return None;
        }
    }
    let mut offset_ms: i64 = 0;
    match b.get(i) {
        None => {}
        Some(b'Z') => {
            i += 1;
        }
        Some(&sign @ (b'+' | b'-')) => {
            let oh = two(b, i + 1)?;
            if b.get(i + 3) != Some(&b':') {
                return None;
            }
            let om = two(b, i + 4)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let off = (oh as i64 * 60 + om as i64) * 60_000;
            offset_ms = if sign == b'+' { off } else { -off };
            i += 6;
        }
        Some(_) => return None,
    }
    if i != b.len() {
        return None;
    }
    let local = NaiveDateTime::new(date, time).and_utc().timestamp_millis();
    Some(Stamp::from_millis(local - offset_ms))
}

/// The position after which the next page starts, bound to its entity and to the
/// `updated_since` it was issued under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub entity: Entity,
    pub since: Option<Stamp>,
    pub last_stamp: Stamp,
    pub last_id: CursorId,
}

/// The id part of a cursor position: UUIDs, or attachment ids (strings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CursorId {
    Uuid(Uuid),
    Text(String),
}

/// What seals cursors and change feed tokens and checks them (see [`crate::signing`]):
/// a tampered token is recognised, and any node of a cluster checks any node's.
#[derive(Clone, Debug)]
pub struct CursorKey(Arc<Signer>);

impl CursorKey {
    /// The key of a node whose signing secret is `secret`.
    pub fn new(secret: [u8; 32]) -> Self {
        CursorKey(Arc::new(Signer::from_secret(&secret)))
    }

    /// Seals with `signer` (shared with the download URLs and the cluster, which
    /// teaches it the other nodes' public keys).
    pub fn from_signer(signer: Arc<Signer>) -> Self {
        CursorKey(signer)
    }

    pub fn signer(&self) -> &Arc<Signer> {
        &self.0
    }

    /// Listings with and without tombstones seal under different names, so that a
    /// cursor of one is refused by the other.
    fn domain(with_tombstones: bool) -> &'static [u8] {
        if with_tombstones {
            b"recruitd-cursor-v2+deleted"
        } else {
            b"recruitd-cursor-v2"
        }
    }

    /// The seal of `payload`, a token of kind `domain`.
    pub fn seal(&self, domain: &[u8], payload: &[u8]) -> [u8; SEAL_LEN] {
        self.0.seal(domain, payload)
    }

    /// Whether `seal` is this cluster's on `payload`, a token of kind `domain`.
    pub fn check(&self, domain: &[u8], payload: &[u8], seal: &[u8]) -> bool {
        self.0.check(domain, payload, seal)
    }
}

const CURSOR_VERSION: u8 = 2;

impl Cursor {
    pub fn encode(&self, key: &CursorKey) -> String {
        self.encode_listing(key, false)
    }

    /// Decodes and checks a cursor for `entity` issued under `since`.
    pub fn decode(
        raw: &str,
        key: &CursorKey,
        entity: Entity,
        since: Option<Stamp>,
    ) -> Result<Cursor, String> {
        Cursor::decode_listing(raw, key, entity, since, false)
    }

    /// The cursor of a listing with tombstones (`include_deleted=true`) or without.
    pub fn encode_listing(&self, key: &CursorKey, with_tombstones: bool) -> String {
        let mut p = Vec::with_capacity(64);
        p.push(CURSOR_VERSION);
        p.push(self.entity.tag());
        match self.since {
            Some(s) => {
                p.push(1);
                p.extend_from_slice(&s.millis().to_be_bytes());
            }
            None => p.push(0),
        }
        p.extend_from_slice(&self.last_stamp.millis().to_be_bytes());
        match &self.last_id {
            CursorId::Uuid(u) => {
                p.push(0);
                p.extend_from_slice(u.as_bytes());
            }
            CursorId::Text(t) => {
                p.push(1);
                p.extend_from_slice(&(t.len() as u16).to_be_bytes());
                p.extend_from_slice(t.as_bytes());
            }
        }
        let seal = key.seal(CursorKey::domain(with_tombstones), &p);
        p.extend_from_slice(&seal);
        URL_SAFE_NO_PAD.encode(p)
    }

    /// Decodes and checks a cursor for `entity` issued under `since`, by a listing with
    /// tombstones or without.
    pub fn decode_listing(
        raw: &str,
        key: &CursorKey,
        entity: Entity,
        since: Option<Stamp>,
        with_tombstones: bool,
    ) -> Result<Cursor, String> {
        let bad = || "cursor is not valid: pass back next_cursor verbatim".to_string();
        let bytes = URL_SAFE_NO_PAD.decode(raw.as_bytes()).map_err(|_| bad())?;
        if bytes.len() < SEAL_LEN + 3 {
            return Err(bad());
        }
        let (payload, seal) = bytes.split_at(bytes.len() - SEAL_LEN);
        if !key.check(CursorKey::domain(with_tombstones), payload, seal) {
            return Err(bad());
        }
        let mut r = Reader(payload);
        if r.u8()? != CURSOR_VERSION {
            return Err(bad());
        }
        let tag = r.u8()?;
        let cur_since = match r.u8()? {
            0 => None,
            1 => Some(Stamp::from_millis(r.i64()?)),
            _ => return Err(bad()),
        };
        let last_stamp = Stamp::from_millis(r.i64()?);
        let last_id = match r.u8()? {
            0 => CursorId::Uuid(Uuid::from_slice(r.take(16)?).map_err(|_| bad())?),
            1 => {
                let n = u16::from_be_bytes(r.take(2)?.try_into().map_err(|_| bad())?) as usize;
                CursorId::Text(String::from_utf8(r.take(n)?.to_vec()).map_err(|_| bad())?)
            }
            _ => return Err(bad()),
        };
        if !r.0.is_empty() {
            return Err(bad());
        }
        if tag != entity.tag() {
            return Err(format!(
                "cursor was issued for another entity, not {}",
                entity.name()
            ));
        }
        if cur_since != since {
            return Err(
                "cursor was issued under a different updated_since: keep updated_since unchanged while paging"
                    .into(),
            );
        }
        Ok(Cursor {
            entity,
            since,
            last_stamp,
            last_id,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("cursor is not valid: pass back next_cursor verbatim".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

/// `updated_since`, exactly: `YYYY-MM-DD`, optionally `Thh:mm[:ss[.sss]]` (or a space for
/// `T`), optionally `Z` or `±hh:mm`. Field ranges are written out so that every string the
/// parser accepts matches (a date that does not exist, such as 02-30, matches and is
/// still refused).
pub const UPDATED_SINCE_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])\
([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{3})?)?)?\
(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?$";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limit_rules() {
        assert_eq!(Limit::parse("250", 500).unwrap().get(), 250);
        assert_eq!(Limit::parse("501", 500).unwrap().get(), 500);
        assert_eq!(
            Limit::parse("99999999999999999999999", 500).unwrap().get(),
            500
        );
        assert_eq!(Limit::parse("007", 500).unwrap().get(), 7);
        for bad in [
            "0", "-1", "2.5e2", "+250", "250.0", " 250", "250 ", "", "abc", "00",
        ] {
            assert!(Limit::parse(bad, 500).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn updated_since_accepts_every_form() {
        let utc = |s: &str| parse_updated_since(s).unwrap().to_string();
        assert_eq!(utc("2026-09-01"), "2026-09-01T00:00:00.000Z");
        assert_eq!(utc("2026-09-01T10:11"), "2026-09-01T10:11:00.000Z");
        assert_eq!(utc("2026-09-01 10:11:12"), "2026-09-01T10:11:12.000Z");
        assert_eq!(utc("2026-09-01T10:11:12.345Z"), "2026-09-01T10:11:12.345Z");
        assert_eq!(utc("2026-09-01T10:11:12+01:00"), "2026-09-01T09:11:12.000Z");
        assert!(parse_updated_since("2026-09-01T10:11:12.5-02:30").is_err());
        assert_eq!(
            utc("2026-09-01T10:11:12.500-02:30"),
            "2026-09-01T12:41:12.500Z"
        );
    }

    #[test]
    fn updated_since_rejects_other_forms() {
        for bad in [
            "2026",
            "2026-08",
            "2026-8-01",
            "01/09/2026",
            "1788220800000",
            "Tue Sep 01 2026 10:00:00 GMT+0100 (British Summer Time)",
            "2026-09-01T10",
            "2026-09-01T10:11:12.3",
            "2026-09-01T10:11:12.3456",
            "2026-09-01T25:00",
            "2026-02-30",
            "2026-09-01T10:11:12+0100",
            "2026-09-01T10:11:12 ",
            " 2026-09-01",
            "2026-09-01t10:11",
        ] {
            let err = parse_updated_since(bad).unwrap_err();
            assert!(err.contains("YYYY-MM-DD"), "{bad}: {err}");
        }
    }

    fn key() -> CursorKey {
        CursorKey::new([7; 32])
    }

    #[test]
    fn cursor_is_bound_to_entity_and_since() {
        let c = Cursor {
            entity: Entity::Jobs,
            since: Some(Stamp::from_millis(5)),
            last_stamp: Stamp::from_millis(9),
            last_id: CursorId::Uuid(Uuid::from_u128(3)),
        };
        let s = c.encode(&key());
        assert_eq!(
            Cursor::decode(&s, &key(), Entity::Jobs, Some(Stamp::from_millis(5))).unwrap(),
            c
        );
        assert!(Cursor::decode(&s, &key(), Entity::Users, Some(Stamp::from_millis(5))).is_err());
        assert!(Cursor::decode(&s, &key(), Entity::Jobs, None).is_err());
        assert!(Cursor::decode(
            &s,
            &CursorKey::new([8; 32]),
            Entity::Jobs,
            Some(Stamp::from_millis(5))
        )
        .is_err());
        assert!(Cursor::decode("not a cursor!", &key(), Entity::Jobs, None).is_err());
    }

    proptest! {
        #[test]
        fn limit_accepts_exactly_digit_strings(s in "\\PC{0,8}") {
            let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.trim_start_matches('0').is_empty();
            prop_assert_eq!(Limit::parse(&s, 500).is_ok(), ok);
            if let Ok(l) = Limit::parse(&s, 500) {
                prop_assert!(l.get() >= 1 && l.get() <= 500);
            }
        }

        #[test]
        fn limit_clamps(n in 1usize..100_000) {
            prop_assert_eq!(Limit::parse(&n.to_string(), 500).unwrap().get(), n.min(500));
        }

        #[test]
        fn updated_since_round_trips(ms in 0i64..4_102_444_800_000) {
            let s = Stamp::from_millis(ms);
            prop_assert_eq!(parse_updated_since(&s.to_string()).unwrap(), s);
        }

        #[test]
        fn updated_since_offsets_shift_the_instant(ms in 86_400_000i64..4_000_000_000_000, oh in 0i64..14, om in 0i64..60, neg: bool) {
            let base = Stamp::from_millis(ms).to_string();
            let local = &base[..23];
            let sign = if neg { '-' } else { '+' };
            let text = format!("{local}{sign}{oh:02}:{om:02}");
            let off = (oh * 60 + om) * 60_000 * if neg { -1 } else { 1 };
            prop_assert_eq!(parse_updated_since(&text).unwrap().millis(), ms - off);
        }

        #[test]
        fn updated_since_never_panics(s in "\\PC{0,40}") {
            let _ = parse_updated_since(&s);
        }

        #[test]
        fn cursor_round_trips(tag in 0usize..9, since in proptest::option::of(any::<i64>()), st in any::<i64>(), id in any::<u128>(), text in proptest::option::of("[a-z]{1,8}:[0-9a-f-]{1,40}")) {
            let c = Cursor {
                entity: Entity::ALL[tag],
                since: since.map(Stamp::from_millis),
                last_stamp: Stamp::from_millis(st),
                last_id: match text { Some(t) => CursorId::Text(t), None => CursorId::Uuid(Uuid::from_u128(id)) },
            };
            let enc = c.encode(&key());
            prop_assert_eq!(Cursor::decode(&enc, &key(), c.entity, c.since).unwrap(), c);
        }

        #[test]
        fn tampered_cursors_are_rejected(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let c = Cursor { entity: Entity::Notes, since: None, last_stamp: Stamp::from_millis(1), last_id: CursorId::Uuid(Uuid::from_u128(2)) };
            let mut raw = URL_SAFE_NO_PAD.decode(c.encode(&key())).unwrap();
            let i = pos.index(raw.len());
            raw[i] ^= flip;
            let enc = URL_SAFE_NO_PAD.encode(raw);
            prop_assert!(Cursor::decode(&enc, &key(), Entity::Notes, None).is_err());
        }
    }
}
