//! The entries of the change log: a record of an entity that changed, and the bytes a
//! log part stores them as. The store encodes the direct entries of each transaction
//! itself ([`encode_parts`]) and decodes parts for the feed ([`decode`]); nothing here
//! knows the workspace's state.

use crate::model::{Entity, Record, RecordKind};
use std::collections::HashSet;
use uuid::Uuid;

/// Entries per log part: a part is one row of the store's log, read whole.
pub const ENTRIES_PER_PART: usize = 4096;

/// The id of a logged record: a UUID, or (attachments) text. Ordered as the tables
/// order their keys (UUIDs by their bytes, texts as strings).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoggedId {
    Uuid(Uuid),
    Text(Box<str>),
}

impl LoggedId {
    pub fn parse(raw: &str) -> LoggedId {
        match Uuid::try_parse(raw) {
            // Only the canonical form travels as 16 bytes: it renders back the same.
            Ok(u) if raw.len() == 36 && u.hyphenated().to_string() == raw => LoggedId::Uuid(u),
            _ => LoggedId::Text(raw.into()),
        }
    }
}

impl From<crate::query::CursorId> for LoggedId {
    fn from(id: crate::query::CursorId) -> Self {
        match id {
            crate::query::CursorId::Uuid(u) => LoggedId::Uuid(u),
            crate::query::CursorId::Text(t) => LoggedId::Text(t.into()),
        }
    }
}

impl From<&LoggedId> for crate::query::CursorId {
    fn from(id: &LoggedId) -> Self {
        match id {
            LoggedId::Uuid(u) => crate::query::CursorId::Uuid(*u),
            LoggedId::Text(t) => crate::query::CursorId::Text(t.to_string()),
        }
    }
}

impl std::fmt::Display for LoggedId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoggedId::Uuid(u) => write!(f, "{}", u.hyphenated()),
            LoggedId::Text(t) => f.write_str(t),
        }
    }
}

/// One change: a record of an entity that changed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Change {
    pub entity: Entity,
    pub id: LoggedId,
}

/// Entries as a log part holds them: per entry a tag byte (the entity's index, plus
/// 0x80 for a UUID) and the id (16 bytes, or a 2-byte length and the text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedEntries {
    bytes: Vec<u8>,
    count: usize,
}

const UUID_TAG: u8 = 0x80;

/// The entity stored as `code` (`Entity::tag`, its place in `Entity::ALL`).
pub fn entity_of_index(code: i64) -> Option<Entity> {
    usize::try_from(code)
        .ok()
        .and_then(|i| Entity::ALL.get(i).copied())
}

impl EncodedEntries {
    pub fn push(&mut self, entity: Entity, id: &LoggedId) {
        let tag = entity.tag();
        match id {
            LoggedId::Uuid(u) => {
                self.bytes.push(tag | UUID_TAG);
                self.bytes.extend_from_slice(u.as_bytes());
            }
            LoggedId::Text(t) => {
                // Attachment ids are short; a longer one is cut at the length field's
                // limit rather than corrupting the part (it then names no record, and
                // the import would have refused such an id long before).
                let t = &t.as_bytes()[..t.len().min(u16::MAX as usize)];
                self.bytes.push(tag);
                self.bytes
                    .extend_from_slice(&(t.len() as u16).to_le_bytes());
                self.bytes.extend_from_slice(t);
            }
        }
        self.count += 1;
    }

    pub fn push_raw(&mut self, entity: Entity, id: &str) {
        self.push(entity, &LoggedId::parse(id))
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// The entries of a part as stored. Bytes that do not decode end the iteration: the
/// store wrote them, so that is corruption, reported by [`decode`]'s caller.
pub fn decode(bytes: &[u8]) -> Result<Vec<Change>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let tag = bytes[at];
        at += 1;
        let entity = *Entity::ALL
            .get((tag & !UUID_TAG) as usize)
            .ok_or_else(|| format!("a change log entry names entity {}", tag & !UUID_TAG))?;
        let id = if tag & UUID_TAG != 0 {
            let raw: [u8; 16] = bytes
                .get(at..at + 16)
                .and_then(|b| b.try_into().ok())
                .ok_or("a change log entry is cut short")?;
            at += 16;
            LoggedId::Uuid(Uuid::from_bytes(raw))
        } else {
            let len = bytes
                .get(at..at + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                .ok_or("a change log entry is cut short")?;
            at += 2;
            let text = bytes
                .get(at..at + len)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or("a change log entry's id is cut short or not UTF-8")?;
            at += len;
            LoggedId::Text(text.into())
        };
        out.push(Change { entity, id });
    }
    Ok(out)
}

/// How many entries a part's bytes hold ([`decode`]'s length), walked without making
/// them: an entry is its tag and a 16-byte id, or its tag, a 2-byte length and the text.
pub fn count(bytes: &[u8]) -> Result<usize, String> {
    let (mut at, mut n) = (0, 0);
    while at < bytes.len() {
        let tag = bytes[at];
        at += 1;
        if Entity::ALL.get((tag & !UUID_TAG) as usize).is_none() {
            return Err(format!(
                "a change log entry names entity {}",
                tag & !UUID_TAG
            ));
        }
        at += if tag & UUID_TAG != 0 {
            16
        } else {
            let len = bytes
                .get(at..at + 2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                .ok_or("a change log entry is cut short")?;
            2 + len
        };
        if at > bytes.len() {
            return Err("a change log entry is cut short".into());
        }
        n += 1;
    }
    Ok(n)
}

/// The records of entities that upserts and deletes change directly: a candidate row
/// names its candidate and, on a job, its application; a deleted one both (whether it
/// was an application is not known here: a tombstone for an id that was not one tells
/// a client nothing it keeps). Pipeline stages are no entity's records.
pub fn direct<'a, U, D>(upserts: U, deletes: D) -> impl Iterator<Item = Change> + 'a
where
    U: IntoIterator<Item = &'a Record>,
    U::IntoIter: 'a,
    D: IntoIterator<Item = (RecordKind, &'a str)>,
    D::IntoIter: 'a,
{
    let upserted = upserts.into_iter().flat_map(|r| {
        let id = match (r.uuid(), r) {
            (Some(u), _) => Some(LoggedId::Uuid(u)),
            (None, Record::Attachment(a)) => Some(LoggedId::parse(&a.id)),
            _ => None,
        };
        let on_job = matches!(r, Record::Candidate(c) if c.job_id.is_some());
        row_changes(r.kind(), id, on_job)
    });
    let deleted = deletes
        .into_iter()
        .flat_map(|(kind, raw)| row_changes(kind, Some(LoggedId::parse(raw)), true));
    upserted.chain(deleted)
}

/// The changes of one record of `kind` (`on_job`: a candidate row that is, or may be, an
/// application).
pub fn row_changes(kind: RecordKind, id: Option<LoggedId>, on_job: bool) -> Vec<Change> {
    let Some(id) = id else { return Vec::new() };
    match kind {
        RecordKind::Candidate if on_job => vec![
            Change {
                entity: Entity::Candidates,
                id: id.clone(),
            },
            Change {
                entity: Entity::Applications,
                id,
            },
        ],
        other => other
            .entity()
            .map(|entity| vec![Change { entity, id }])
            .unwrap_or_default(),
    }
}

/// The direct entries of one transaction's upserts and deletes ([`direct`]), then
/// `extra` (the derived ones), in parts of at most [`ENTRIES_PER_PART`].
pub fn encode_parts<'a, U, D>(upserts: U, deletes: D, extra: &[Change]) -> Vec<EncodedEntries>
where
    U: IntoIterator<Item = &'a Record>,
    U::IntoIter: 'a,
    D: IntoIterator<Item = (RecordKind, &'a str)>,
    D::IntoIter: 'a,
{
    let mut parts = vec![EncodedEntries::default()];
    for change in direct(upserts, deletes).chain(extra.iter().cloned()) {
        if parts.last().is_some_and(|p| p.len() >= ENTRIES_PER_PART) {
            parts.push(EncodedEntries::default());
        }
        parts
            .last_mut()
            .expect("never empty")
            .push(change.entity, &change.id);
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// The storage kind a logged change's record is kept as.
fn kind_of(entity: Entity) -> RecordKind {
    match entity {
        Entity::Candidates | Entity::Applications => RecordKind::Candidate,
        Entity::Contacts => RecordKind::Contact,
        Entity::Companies => RecordKind::Company,
        Entity::Jobs => RecordKind::Job,
        Entity::Notes => RecordKind::Note,
        Entity::Tasks => RecordKind::Task,
        Entity::Attachments => RecordKind::Attachment,
        Entity::Users => RecordKind::User,
    }
}

/// The stored records the changes name, each once, in the order of [`RecordKind::ALL`].
pub fn stored_keys(changes: &[Change]) -> Vec<(RecordKind, String)> {
    let mut keys: Vec<(RecordKind, String)> = changes
        .iter()
        .map(|c| (kind_of(c.entity), c.id.to_string()))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    keys.sort_by_key(|(kind, id)| (rank(*kind), id.clone()));
    keys
}

fn rank(kind: RecordKind) -> usize {
    RecordKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entity_is_stored_as_its_place_in_all() {
        for (i, e) in Entity::ALL.iter().enumerate() {
            assert_eq!(usize::from(e.tag()), i);
            assert_eq!(entity_of_index(i as i64), Some(*e));
        }
    }

    #[test]
    fn entries_round_trip() {
        let mut e = EncodedEntries::default();
        let u = Uuid::new_v4();
        e.push(Entity::Notes, &LoggedId::Uuid(u));
        e.push_raw(Entity::Attachments, "att_1");
        e.push_raw(Entity::Users, &u.to_string());
        // A UUID not in canonical form stays text, so it renders back as written.
        e.push_raw(Entity::Jobs, &u.simple().to_string());
        assert_eq!(e.len(), 4);
        let back = decode(e.as_bytes()).unwrap();
        assert_eq!(
            back,
            vec![
                Change {
                    entity: Entity::Notes,
                    id: LoggedId::Uuid(u)
                },
                Change {
                    entity: Entity::Attachments,
                    id: LoggedId::Text("att_1".into())
                },
                Change {
                    entity: Entity::Users,
                    id: LoggedId::Uuid(u)
                },
                Change {
                    entity: Entity::Jobs,
                    id: LoggedId::Text(u.simple().to_string().into())
                },
            ]
        );
        assert_eq!(back[2].id.to_string(), u.to_string());
        assert!(decode(&e.as_bytes()[..5]).is_err());
        assert!(decode(&[0x7f]).is_err());
    }

    #[test]
    fn a_count_is_the_length_of_the_decoding() {
        let mut e = EncodedEntries::default();
        for i in 0..50 {
            if i % 3 == 0 {
                e.push_raw(Entity::Attachments, &"a".repeat(i));
            } else {
                e.push(Entity::Notes, &LoggedId::Uuid(Uuid::new_v4()));
            }
            let bytes = e.as_bytes();
            assert_eq!(count(bytes), Ok(decode(bytes).unwrap().len()));
            assert_eq!(count(bytes), Ok(e.len()));
        }
        // Cut anywhere inside an entry, or naming no entity: refused, as decoding is.
        let bytes = e.as_bytes();
        for cut in 1..40 {
            let short = &bytes[..bytes.len() - cut];
            assert_eq!(count(short).is_err(), decode(short).is_err(), "{cut}");
        }
        assert!(count(&[0x7f]).is_err());
        assert_eq!(count(&[]), Ok(0));
    }
}
