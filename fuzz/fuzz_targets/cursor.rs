//! Cursors (`actors::query::Cursor`), with a fixed key. Two halves, chosen by the first
//! byte: arbitrary text given to `decode` never panics, and what it accepts re-encodes to
//! exactly that text (one spelling per cursor: a tampered cursor is refused); and any
//! cursor built from the input encodes to text that decodes back to it, for its own
//! entity and `updated_since` only.
#![no_main]

use actors::model::Entity;
use actors::query::{Cursor, CursorId, CursorKey};
use actors::time::Stamp;
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

fn key() -> CursorKey {
    CursorKey::new([7u8; 32])
}

fn entity(u: &mut Unstructured<'_>) -> arbitrary::Result<Entity> {
    Ok(*u.choose(&Entity::ALL)?)
}

fn since(u: &mut Unstructured<'_>) -> arbitrary::Result<Option<Stamp>> {
    Ok(Option::<i64>::arbitrary(u)?.map(Stamp::from_millis))
}

fn built(u: &mut Unstructured<'_>) -> arbitrary::Result<Cursor> {
    let last_id = if bool::arbitrary(u)? {
        CursorId::Uuid(uuid::Uuid::from_bytes(<[u8; 16]>::arbitrary(u)?))
    } else {
        CursorId::Text(String::arbitrary(u)?)
    };
    Ok(Cursor {
        entity: entity(u)?,
        since: since(u)?,
        last_stamp: Stamp::from_millis(i64::arbitrary(u)?),
        last_id,
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(decode_text) = bool::arbitrary(&mut u) else {
        return;
    };
    let key = key();
    if decode_text {
        let (Ok(e), Ok(s)) = (entity(&mut u), since(&mut u)) else {
            return;
        };
        let Ok(raw) = std::str::from_utf8(u.take_rest()) else {
            return;
        };
        if let Ok(c) = Cursor::decode(raw, &key, e, s) {
            assert_eq!(c.entity, e);
            assert_eq!(c.since, s);
            assert_eq!(
                c.encode(&key),
                raw,
                "a second spelling of a cursor was accepted"
            );
        }
    } else {
        let Ok(c) = built(&mut u) else {
            return;
        };
        let text = c.encode(&key);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(
            Cursor::decode(&text, &key, c.entity, c.since),
            Ok(c.clone())
        );
        let other = Entity::ALL[(c.entity.tag() as usize + 1) % Entity::ALL.len()];
        assert!(Cursor::decode(&text, &key, other, c.since).is_err());
        // Any other `updated_since`, absent included, refuses it.
        let moved = Some(c.since.map_or(Stamp::from_millis(0), |s| {
            Stamp::from_millis(s.millis() ^ 1)
        }));
        assert!(Cursor::decode(&text, &key, c.entity, moved).is_err());
        if c.since.is_some() {
            assert!(Cursor::decode(&text, &key, c.entity, None).is_err());
        }
        assert!(Cursor::decode(&text, &CursorKey::new([8u8; 32]), c.entity, c.since).is_err());
    }
});
