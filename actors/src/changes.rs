//! The change log behind `GET /v1/changes`: which records each commit changed.
//!
//! Every store transaction that moves a workspace's commit position writes, in that
//! transaction, the records it changed as log parts: `(position, part)` rows of at most
//! [`ENTRIES_PER_PART`] entries each, an entry naming one record of one entity. The
//! position is the workspace's commit counter, bumped in the same transaction, so the
//! log is gap-free and in commit order per workspace, across restarts (and across nodes
//! sharing the store). A reader that has applied up to a position fetches the parts
//! after it with one indexed range read.
//!
//! An entry says only *that* a record changed, not how: the feed shows each record as
//! it stands at the answer's point, an upsert when the API shows it then and a tombstone
//! when it does not (deleted, private, removed user, application of a deleted job). So a
//! log that names a record more often than needed costs a duplicate, never a wrong
//! answer; one that misses a record would. Hence the entries are made where nothing can
//! be missed:
//! - the store writes the direct ones itself, from the very upserts and deletes of each
//!   transaction ([`encode_parts`]): a candidate row names its candidate and, on a job,
//!   its application; a deleted one both;
//! - the actors add the derived ones ([`derived`]): records whose API representation
//!   changed because another record did (a company's name on its contacts and jobs, a
//!   user's activity on the `owning_recruiter_id` of candidate rows, a stage on the rows
//!   at it, a job on its applications, a contact's company on its notes, a candidate
//!   row's stamps on its CVs).

use crate::entities;
use crate::model::{Entity, Record, RecordKind};
use crate::query::CursorKey;
use crate::state::WorkspaceState;
use crate::store::{Store, StoreError};
use crate::time::Stamp;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
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
        other => crate::entities::entity_of(other)
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

/// The records whose API representation a commit changed without writing them: those
/// that show something of a record the commit wrote (`written`: kind and id of each
/// record upserted or deleted, with the state before and after the commit).
///
/// Companies, contacts, jobs, users and stages are few and changed rarely, so their
/// dependents are found by scanning; a candidate row's CVs through `cv_by_row`, and only
/// when the row existed before and its stamps moved (the CVs show them).
pub fn derived(
    before: &WorkspaceState,
    after: &WorkspaceState,
    written: impl IntoIterator<Item = (RecordKind, Uuid)>,
) -> Vec<Change> {
    let mut companies = HashSet::new();
    let mut contacts = HashSet::new();
    let mut jobs = HashSet::new();
    let mut users = HashSet::new();
    let mut stages = HashSet::new();
    let mut rows = Vec::new();
    for (kind, u) in written {
        match kind {
            RecordKind::Company => {
                companies.insert(u);
            }
            RecordKind::Contact => {
                contacts.insert(u);
            }
            RecordKind::Job => {
                jobs.insert(u);
            }
            RecordKind::User => {
                users.insert(u);
            }
            RecordKind::Stage => {
                stages.insert(u);
            }
            RecordKind::Candidate => {
                let stamps = |ws: &WorkspaceState| {
                    ws.candidates
                        .get(&u)
                        .map(|r| (r.created_at(), r.updated_at()))
                };
                if let Some(was) = stamps(before) {
                    if stamps(after) != Some(was) {
                        rows.push(u);
                    }
                }
            }
            _ => {}
        }
    }
    // Dependents are looked for among the records as they are after the commit, and
    // kept only when the commit left them alone (the same record, not a copy, in both
    // states): a record written, created or deleted is in the log already.
    let mut out: Vec<Change> = Vec::new();
    let mut add = |entity: Entity, id: LoggedId| out.push(Change { entity, id });
    fn kept<T: ?Sized>(a: Option<&std::sync::Arc<T>>, b: &std::sync::Arc<T>) -> bool {
        a.is_some_and(|a| std::sync::Arc::ptr_eq(a, b))
    }
    if !companies.is_empty() {
        for (id, job) in after.jobs.iter() {
            if job.company_id.is_some_and(|c| companies.contains(&c))
                && kept(before.jobs.get(id), job)
            {
                add(Entity::Jobs, LoggedId::Uuid(*id));
            }
        }
        for (id, contact) in after.contacts.iter() {
            if companies.contains(&contact.raw.company_id) && kept(before.contacts.get(id), contact)
            {
                add(Entity::Contacts, LoggedId::Uuid(*id));
            }
        }
    }
    if !contacts.is_empty() {
        for (id, note) in after.notes.iter() {
            if contacts.contains(&note.parent_id()) && kept(before.notes.get(id), note) {
                add(Entity::Notes, LoggedId::Uuid(*id));
            }
        }
    }
    if !jobs.is_empty() || !users.is_empty() || !stages.is_empty() {
        for (id, row) in after.candidates.iter() {
            let on_job = row.job_id();
            // The recruiter of the row's job before or after: either may be the one the
            // row showed, or shows now.
            let recruiter = |ws: &WorkspaceState| {
                on_job
                    .and_then(|j| ws.jobs.get(&j))
                    .and_then(|j| j.assigned_recruiter_id)
            };
            // Each test only when its set has members: a job's PATCH tests every row
            // against the jobs alone, not two job lookups a row for users nobody wrote.
            let touched = on_job.is_some_and(|j| jobs.contains(&j))
                || (!users.is_empty()
                    && (row.owner_id().is_some_and(|o| users.contains(&o))
                        || recruiter(before).is_some_and(|r| users.contains(&r))
                        || recruiter(after).is_some_and(|r| users.contains(&r))))
                || (!stages.is_empty() && row.stage_id().is_some_and(|s| stages.contains(&s)));
            if touched && kept(before.candidates.get(id), row) {
                add(Entity::Candidates, LoggedId::Uuid(*id));
                if on_job.is_some() {
                    add(Entity::Applications, LoggedId::Uuid(*id));
                }
            }
        }
    }
    for row in &rows {
        for at in after.cv_by_row.of(*row) {
            if let Some((cv, rec)) = after.attachments.at_row(at) {
                if kept(before.attachments.get(cv), rec) {
                    add(Entity::Attachments, LoggedId::parse(cv));
                }
            }
        }
    }
    // The scans above find what may have changed (a job's applications, whatever of the
    // job changed); only what the API now shows differently is a change: each is
    // rendered in both states and compared.
    out.retain(|c| rendered(before, c) != rendered(after, c));
    out
}

/// What the API shows of a record in `ws`: its JSON, or nothing when it is not shown.
fn rendered(ws: &WorkspaceState, change: &Change) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match entities::write_visible(ws, change.entity, &change.id.to_string(), &mut out) {
        Ok(true) => Some(out),
        _ => None,
    }
}

/// The records behind `derived` changes, rewritten with `updated_at` at `stamp`: a
/// representation that changed moves the record's `updated_at` too, so that a
/// watermark client (`updated_since`) sees it as the feed does. Attachments are left
/// out: a CV's stamps are its candidate row's, which the change moved already.
pub fn touch(ws: &WorkspaceState, derived: &[Change], stamp: crate::time::Stamp) -> Vec<Record> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for change in derived {
        let LoggedId::Uuid(id) = change.id else {
            continue;
        };
        let kind = match change.entity {
            Entity::Candidates | Entity::Applications => RecordKind::Candidate,
            Entity::Contacts => RecordKind::Contact,
            Entity::Jobs => RecordKind::Job,
            Entity::Notes => RecordKind::Note,
            _ => continue,
        };
        if !seen.insert((kind, id)) {
            continue;
        }
        let record = match kind {
            RecordKind::Candidate => ws.candidates.get(&id).map(|c| {
                let mut raw = c.raw();
                raw.updated_at = stamp;
                Record::Candidate(Box::new(raw))
            }),
            RecordKind::Contact => ws.contacts.get(&id).map(|c| {
                let mut raw = c.raw.clone();
                raw.updated_at = stamp;
                Record::Contact(raw)
            }),
            RecordKind::Job => ws.jobs.get(&id).map(|j| {
                let mut raw = (**j).clone();
                raw.updated_at = stamp;
                Record::Job(raw)
            }),
            _ => ws.notes.get(&id).map(|n| {
                let mut raw = n.raw();
                raw.updated_at = stamp;
                Record::Note(raw)
            }),
        };
        out.extend(record);
    }
    out
}

/// The kinds and ids of a change set's writes that [`derived`] looks at.
pub fn written(changes: &crate::store::ChangeSet) -> Vec<(RecordKind, Uuid)> {
    changes
        .upserts
        .iter()
        .filter_map(|r| Some((r.kind(), r.uuid()?)))
        .chain(
            changes
                .deletes
                .iter()
                .filter_map(|(k, id)| Some((*k, Uuid::try_parse(id).ok()?))),
        )
        .collect()
}

/// A point in a workspace's change log, as a feed token carries it: after `index`
/// entries of part `part` at commit position `position` ([`WHOLE_PART`]: after all of
/// that part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedPoint {
    pub position: u64,
    pub part: u32,
    pub index: u32,
}

/// `FeedPoint::index` of a part read to its end.
pub const WHOLE_PART: u32 = u32::MAX;

impl FeedPoint {
    /// After everything up to `position` included: where a state at `position` stands.
    pub fn at(position: u64) -> FeedPoint {
        FeedPoint {
            position,
            part: u32::MAX,
            index: WHOLE_PART,
        }
    }

    /// Whether some of position `position`'s parts may remain to read from here: the
    /// point is inside that position, not after all of it.
    fn inside(self) -> bool {
        self.part != u32::MAX || self.index != WHOLE_PART
    }

    /// The exclusive lower bound of the parts still to read from here: this part when
    /// some of its entries remain, else the ones after it.
    fn read_after(self) -> (u64, u32) {
        if self.index == WHOLE_PART {
            (self.position, self.part)
        } else if self.part > 0 {
            (self.position, self.part - 1)
        } else {
            (self.position.saturating_sub(1), u32::MAX)
        }
    }
}

const TOKEN_DOMAIN: &[u8] = b"recruitd-changes-v2";
const TOKEN_VERSION: u8 = 2;

/// Why a `since` token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Not a token this server issued, or altered.
    Invalid,
    /// Issued for another workspace.
    OtherWorkspace,
}

/// The opaque, signed form of a point of `workspace`'s log.
pub fn encode_token(key: &CursorKey, workspace: Uuid, point: FeedPoint) -> String {
    let mut p = Vec::with_capacity(16 + 1 + 16 + 8 + 4 + 4);
    p.push(TOKEN_VERSION);
    p.extend_from_slice(workspace.as_bytes());
    p.extend_from_slice(&point.position.to_be_bytes());
    p.extend_from_slice(&point.part.to_be_bytes());
    p.extend_from_slice(&point.index.to_be_bytes());
    let seal = key.seal(TOKEN_DOMAIN, &p);
    p.extend_from_slice(&seal);
    URL_SAFE_NO_PAD.encode(p)
}

/// The point a token names, checked: signed by `key`, for `workspace`.
pub fn decode_token(key: &CursorKey, workspace: Uuid, raw: &str) -> Result<FeedPoint, TokenError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(raw.as_bytes())
        .map_err(|_| TokenError::Invalid)?;
    if bytes.len() != 1 + 16 + 8 + 4 + 4 + crate::signing::SEAL_LEN {
        return Err(TokenError::Invalid);
    }
    let (payload, seal) = bytes.split_at(bytes.len() - crate::signing::SEAL_LEN);
    if !key.check(TOKEN_DOMAIN, payload, seal) || payload[0] != TOKEN_VERSION {
        return Err(TokenError::Invalid);
    }
    let ws = Uuid::from_slice(&payload[1..17]).map_err(|_| TokenError::Invalid)?;
    if ws != workspace {
        return Err(TokenError::OtherWorkspace);
    }
    let num = |at: usize, n: usize| {
        payload[at..at + n]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    };
    Ok(FeedPoint {
        position: num(17, 8),
        part: num(25, 4) as u32,
        index: num(29, 4) as u32,
    })
}

/// One answer of the feed: the `data` array's JSON, the point after it, and whether
/// more is already waiting.
#[derive(Debug)]
pub struct FeedPage {
    pub data: Vec<u8>,
    pub changes: usize,
    pub next: FeedPoint,
    pub has_more: bool,
}

/// Why the feed cannot answer.
#[derive(Debug)]
pub enum FeedError {
    /// The point is older than the kept log: the client must sync afresh.
    Pruned,
    /// The point lies beyond this state (a token of a store that was replaced).
    Ahead,
    Store(StoreError),
}

/// Most parts read per store round trip. A read asks for as many as the answer still
/// needs at the mean size of the parts read so far, starting with two: an import's
/// parts hold thousands of entries (one part fills a page), API write batches a few
/// (a page spans hundreds).
const MAX_PARTS_PER_READ: usize = 256;

/// How many parts the next read asks for, to find `wanted` more entries when `parts`
/// parts held `entries`.
fn parts_to_read(wanted: usize, parts: usize, entries: usize) -> usize {
    if parts == 0 || entries == 0 {
        // The rest of the part the point is in, and the next.
        return 2;
    }
    (wanted * parts / entries + 1).clamp(1, MAX_PARTS_PER_READ)
}

/// The changes after `since` as `ws` shows them, at most `limit` records, each once,
/// in commit order (of the first of its changes in the answer): an upsert with the
/// record as `GET /v1/{entity}/{id}` gives it when the state shows it, a tombstone
/// otherwise. Only the log up to the state's own position is read, so the answer is
/// exactly the state's. The answer's `data` array is appended to `out`.
pub async fn feed_page(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    entities: &[Entity],
    limit: usize,
    out: Vec<u8>,
) -> Result<FeedPage, FeedError> {
    feed_pick(store, cache, ws, since, entities, limit)
        .await?
        .render(ws, out)
}

/// The changes an answer of the feed shows, chosen from the log (the store's part of
/// [`feed_page`]), before they are rendered ([`Picked::render`], the CPU's part).
#[derive(Debug)]
pub struct Picked {
    /// Each change with its part's commit time.
    changes: Vec<(Change, i64)>,
    next: FeedPoint,
    has_more: bool,
}

impl Picked {
    pub fn has_more(&self) -> bool {
        self.has_more
    }

    pub fn next(&self) -> FeedPoint {
        self.next
    }

    /// The answer, rendered as `ws` (the state the changes were picked from) shows each
    /// record: the `data` array appended to `out`.
    ///
    /// A full page is rendered in two halves on the rayon pool: the answer is the
    /// longest the API writes record by record, and a client catching up waits for
    /// each one in turn.
    pub fn render(&self, ws: &WorkspaceState, mut out: Vec<u8>) -> Result<FeedPage, FeedError> {
        out.reserve(256 + self.changes.len() * 1024);
        out.push(b'[');
        let (first, second) = self
            .changes
            .split_at(if self.changes.len() >= RENDER_SPLIT_AT {
                self.changes.len() / 2
            } else {
                self.changes.len()
            });
        if second.is_empty() {
            write_changes(ws, first, &mut out)?;
        } else {
            let mut rest = Vec::with_capacity(second.len() * 1024);
            let (a, b) = rayon::join(
                || write_changes(ws, first, &mut out),
                || write_changes(ws, second, &mut rest),
            );
            a.and(b)?;
            out.push(b',');
            out.extend_from_slice(&rest);
        }
        out.push(b']');
        Ok(FeedPage {
            data: out,
            changes: self.changes.len(),
            next: self.next,
            has_more: self.has_more,
        })
    }
}

/// Changes from which an answer is rendered in two halves (see [`Picked::render`]).
const RENDER_SPLIT_AT: usize = 128;

/// `changes`, as the feed shows them, comma-separated.
fn write_changes(
    ws: &WorkspaceState,
    changes: &[(Change, i64)],
    out: &mut Vec<u8>,
) -> Result<(), FeedError> {
    for (n, (change, at)) in changes.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_change(ws, change, *at, out)
            .map_err(|e| FeedError::Store(StoreError::Other(e.to_string())))?;
    }
    Ok(())
}

/// The store's part of [`feed_page`]: which changes after `since` the answer shows.
pub async fn feed_pick(
    store: &dyn Store,
    cache: &PartCache,
    ws: &WorkspaceState,
    since: FeedPoint,
    entities: &[Entity],
    limit: usize,
) -> Result<Picked, FeedError> {
    if since.position > ws.position {
        return Err(FeedError::Ahead);
    }
    let mut picked: Vec<(Change, i64)> = Vec::with_capacity(limit.min(1024));
    let mut seen: HashSet<Change, foldhash::fast::RandomState> = HashSet::default();
    let mut after = since.read_after();
    let mut skip = (since.index != WHOLE_PART).then_some((since.position, since.part, since.index));
    let mut next = since;
    let (mut parts_read, mut entries_read) = (0, 0);
    let mut pending: VecDeque<Arc<DecodedPart>> = VecDeque::new();
    // A point inside a part starts with that part, which the answer before this one
    // most likely read (a client catching up reads an import's part in several
    // answers): from the cache, it costs no store read.
    if since.index != WHOLE_PART {
        if let Some(part) = cache.get(ws.id(), since.position, since.part) {
            pending.push_back(part);
        }
    }
    // Whether a store read has said the log holds nothing more up to the state.
    let mut exhausted = None;
    loop {
        if pending.is_empty() {
            if exhausted == Some(true) {
                break;
            }
            let ask = parts_to_read(limit - picked.len(), parts_read, entries_read);
            let read = store
                .read_changes(ws.id(), after, ws.position, ask)
                .await
                .map_err(FeedError::Store)?;
            // Parts at or below `pruned_through` are gone: a point inside that very
            // position has lost the rest of it too.
            if read.pruned_through > since.position
                || (since.inside() && read.pruned_through >= since.position)
            {
                return Err(FeedError::Pruned);
            }
            exhausted = Some(read.parts.len() < ask);
            for part in read.parts {
                let decoded = Arc::new(DecodedPart::decode(part)?);
                cache.put(ws.id(), decoded.clone());
                pending.push_back(decoded);
            }
            if pending.is_empty() {
                break;
            }
        }
        let part = pending.pop_front().expect("a part is pending");
        let first = match skip.take() {
            Some((p, q, i)) if (p, q) == (part.position, part.part) => i as usize,
            _ => 0,
        };
        parts_read += 1;
        entries_read += part.entries.len();
        for (i, change) in part.entries.iter().enumerate().skip(first) {
            if picked.len() == limit {
                // Full: what remains of this part, or any part after it, waits.
                let more = i < part.entries.len()
                    || !pending.is_empty()
                    || exhausted == Some(false)
                    || !store
                        .read_changes(ws.id(), (part.position, part.part), ws.position, 1)
                        .await
                        .map_err(FeedError::Store)?
                        .parts
                        .is_empty();
                return Ok(Picked {
                    changes: picked,
                    next,
                    has_more: more,
                });
            }
            next = FeedPoint {
                position: part.position,
                part: part.part,
                index: if i + 1 == part.entries.len() {
                    WHOLE_PART
                } else {
                    (i + 1) as u32
                },
            };
            if !entities.contains(&change.entity) || !seen.insert(change.clone()) {
                continue;
            }
            picked.push((change.clone(), part.committed_at_ms));
        }
        next = FeedPoint {
            position: part.position,
            part: part.part,
            index: WHOLE_PART,
        };
        after = (part.position, part.part);
    }
    // Read to the state's position: the next answer starts after all of it.
    Ok(Picked {
        changes: picked,
        next: FeedPoint::at(ws.position),
        has_more: false,
    })
}

/// A part of the log, decoded.
pub struct DecodedPart {
    position: u64,
    part: u32,
    committed_at_ms: i64,
    entries: Vec<Change>,
}

impl DecodedPart {
    fn decode(part: crate::store::LogPart) -> Result<DecodedPart, FeedError> {
        let entries = decode(&part.entries).map_err(|e| {
            FeedError::Store(StoreError::Corrupt(format!(
                "change log part {}/{}: {e}",
                part.position, part.part
            )))
        })?;
        Ok(DecodedPart {
            position: part.position,
            part: part.part,
            committed_at_ms: part.committed_at_ms,
            entries,
        })
    }
}

/// Parts a [`PartCache`] keeps.
const CACHED_PARTS: usize = 64;

/// The log parts the feed read last, decoded, for the readers of one store (a
/// server's). A part never changes once committed, and the feed reads only committed
/// ones (up to a published state's position), so a cached part is always the store's.
/// A part of an import holds 4,096 entries: a client catching up reads it in eight
/// answers of 500, and seven of them find it here rather than read and decode it
/// again. Holds a few megabytes at most.
#[derive(Default)]
pub struct PartCache {
    inner: parking_lot::Mutex<CachedParts>,
}

type PartKey = (Uuid, u64, u32);

#[derive(Default)]
struct CachedParts {
    parts: std::collections::HashMap<PartKey, Arc<DecodedPart>>,
    /// Oldest first: the first to go.
    order: VecDeque<PartKey>,
}

impl PartCache {
    fn get(&self, workspace: Uuid, position: u64, part: u32) -> Option<Arc<DecodedPart>> {
        self.inner
            .lock()
            .parts
            .get(&(workspace, position, part))
            .cloned()
    }

    fn put(&self, workspace: Uuid, part: Arc<DecodedPart>) {
        let key = (workspace, part.position, part.part);
        let mut g = self.inner.lock();
        if g.parts.insert(key, part).is_none() {
            g.order.push_back(key);
            while g.order.len() > CACHED_PARTS {
                let old = g.order.pop_front().expect("longer than the cap");
                g.parts.remove(&old);
            }
        }
    }
}

/// One change as the feed shows it (see [`feed_page`]).
fn write_change(
    ws: &WorkspaceState,
    change: &Change,
    committed_at_ms: i64,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"entity\":\"");
    out.extend_from_slice(change.entity.name().as_bytes());
    out.extend_from_slice(b"\",\"id\":");
    match &change.id {
        // A UUID needs no escaping: written straight from its bytes.
        LoggedId::Uuid(id) => {
            out.push(b'"');
            out.extend_from_slice(
                id.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    .as_bytes(),
            );
            out.push(b'"');
        }
        LoggedId::Text(id) => serde_json::to_writer(&mut *out, &**id)?,
    }
    let at = out.len();
    out.extend_from_slice(b",\"op\":\"upsert\",\"record\":");
    if entities::write_visible_logged(ws, change.entity, &change.id, out)? {
        out.push(b'}');
    } else {
        out.truncate(at);
        out.extend_from_slice(b",\"op\":\"delete\",\"deleted_at\":\"");
        let mut stamp = [0u8; 24];
        Stamp::from_millis(committed_at_ms).write_iso_ascii(&mut stamp);
        out.extend_from_slice(&stamp);
        out.extend_from_slice(b"\"}");
    }
    Ok(())
}

/// `--changes-retention-days`' default: the history a client may fall behind by.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// How often retention prunes each workspace's log.
pub const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ask_for_what_the_answer_still_needs() {
        // Nothing read yet: the point's part and the next.
        assert_eq!(parts_to_read(500, 0, 0), 2);
        // Import parts of 4,096 entries: one more part fills any page.
        assert_eq!(parts_to_read(500, 1, 4096), 1);
        // API batches of two or three entries: a page needs some two hundred parts.
        assert_eq!(parts_to_read(500, 4, 10), 201);
        // Never more than the cap, never none.
        assert_eq!(parts_to_read(500, 100, 100), MAX_PARTS_PER_READ);
        assert_eq!(parts_to_read(0, 3, 9), 1);
    }

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
    fn tokens_are_signed_and_name_their_workspace() {
        let key = CursorKey::new([7; 32]);
        let ws = Uuid::new_v4();
        let point = FeedPoint {
            position: 42,
            part: 3,
            index: 17,
        };
        let token = encode_token(&key, ws, point);
        assert_eq!(decode_token(&key, ws, &token), Ok(point));
        assert_eq!(
            decode_token(&key, Uuid::new_v4(), &token),
            Err(TokenError::OtherWorkspace)
        );
        assert_eq!(
            decode_token(&CursorKey::new([8; 32]), ws, &token),
            Err(TokenError::Invalid)
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        bytes[20] ^= 1;
        let altered = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(decode_token(&key, ws, &altered), Err(TokenError::Invalid));
        assert_eq!(decode_token(&key, ws, "x"), Err(TokenError::Invalid));
        // A list cursor signed with the same key is not a feed token.
        let cursor = crate::query::Cursor {
            entity: Entity::Notes,
            since: None,
            last_stamp: Stamp::from_millis(0),
            last_id: crate::query::CursorId::Uuid(ws),
        }
        .encode(&key);
        assert_eq!(decode_token(&key, ws, &cursor), Err(TokenError::Invalid));
    }

    fn state_at(position: u64) -> WorkspaceState {
        let mut ws = WorkspaceState::new(crate::model::Workspace {
            id: Uuid::new_v4(),
            name: None,
            default_region: None,
        });
        ws.position = position;
        ws
    }

    #[tokio::test]
    async fn a_point_behind_the_pruned_log_or_ahead_of_the_state_is_refused() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let ws = state_at(0);
        let id = ws.id();
        for _ in 0..3 {
            let changes = crate::store::ChangeSet {
                deletes: vec![(RecordKind::Task, Uuid::new_v4().to_string())],
                ..Default::default()
            };
            store.commit(id, &changes).await.unwrap();
        }
        let mut ws = ws;
        ws.position = 3;
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            100,
            Vec::new(),
        )
        .await
        .unwrap();
        // Tasks the state does not hold: shown as tombstones, each once.
        assert_eq!(page.changes, 3);
        assert_eq!(page.next, FeedPoint::at(3));
        assert!(!page.has_more);
        let two = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            2,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(two.changes, 2);
        assert!(two.has_more);
        let rest = feed_page(&*store, &cache, &ws, two.next, &Entity::ALL, 2, Vec::new())
            .await
            .unwrap();
        assert_eq!(rest.changes, 1);
        assert!(!rest.has_more);
        assert!(matches!(
            feed_page(
                &*store,
                &cache,
                &ws,
                FeedPoint::at(4),
                &Entity::ALL,
                10,
                Vec::new()
            )
            .await,
            Err(FeedError::Ahead)
        ));
        store
            .prune_changes(id, crate::store::now_ms() + 1)
            .await
            .unwrap();
        assert!(matches!(
            feed_page(
                &*store,
                &cache,
                &ws,
                FeedPoint::at(2),
                &Entity::ALL,
                10,
                Vec::new()
            )
            .await,
            Err(FeedError::Pruned)
        ));
        // Inside the pruned position (a token taken half-way through it), the rest of
        // it is gone too.
        let inside = FeedPoint {
            position: 3,
            part: 0,
            index: 0,
        };
        assert!(matches!(
            feed_page(&*store, &cache, &ws, inside, &Entity::ALL, 10, Vec::new()).await,
            Err(FeedError::Pruned)
        ));
        // At the pruned point itself nothing is missing.
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(3),
            &Entity::ALL,
            10,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!(page.changes, 0);
    }

    #[tokio::test]
    async fn a_point_inside_a_part_reads_that_part_from_the_cache() {
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        let tasks: Vec<_> = (0..10).map(|_| Uuid::new_v4().to_string()).collect();
        let changes = crate::store::ChangeSet {
            deletes: tasks
                .iter()
                .map(|t| (RecordKind::Task, t.clone()))
                .collect(),
            ..Default::default()
        };
        // The first commit logs nothing: a second one, of ten entries in one part.
        store.commit(ws.id(), &Default::default()).await.unwrap();
        store.commit(ws.id(), &changes).await.unwrap();
        ws.position = 2;
        let first = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            3,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((first.changes, first.has_more), (3, true));
        // The store is down: the rest of the part comes from the cache, in order.
        store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let second = feed_page(
            &*store,
            &cache,
            &ws,
            first.next,
            &Entity::ALL,
            3,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((second.changes, second.has_more), (3, true));
        let shown = String::from_utf8(second.data).unwrap();
        for t in &tasks[3..6] {
            assert!(shown.contains(t.as_str()), "{t} not in {shown}");
        }
        // Past the part's end the store is needed again.
        assert!(feed_page(
            &*store,
            &cache,
            &ws,
            second.next,
            &Entity::ALL,
            10,
            Vec::new()
        )
        .await
        .is_err());
        store.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        let rest = feed_page(
            &*store,
            &cache,
            &ws,
            second.next,
            &Entity::ALL,
            10,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((rest.changes, rest.has_more), (4, false));
        assert_eq!(rest.next, FeedPoint::at(2));
    }

    #[tokio::test]
    async fn a_large_answer_is_rendered_whole_and_in_commit_order() {
        // 301 changes: rendered in two halves (`RENDER_SPLIT_AT`), joined into one array.
        let store = crate::store::MemoryStore::new();
        let cache = PartCache::default();
        let mut ws = state_at(0);
        store.commit(ws.id(), &Default::default()).await.unwrap();
        let tasks: Vec<_> = (0..301).map(|_| Uuid::new_v4().to_string()).collect();
        for chunk in tasks.chunks(7) {
            let changes = crate::store::ChangeSet {
                deletes: chunk
                    .iter()
                    .map(|t| (RecordKind::Task, t.clone()))
                    .collect(),
                ..Default::default()
            };
            store.commit(ws.id(), &changes).await.unwrap();
            ws.position += 1;
        }
        ws.position += 1;
        let page = feed_page(
            &*store,
            &cache,
            &ws,
            FeedPoint::at(0),
            &Entity::ALL,
            500,
            Vec::new(),
        )
        .await
        .unwrap();
        assert_eq!((page.changes, page.has_more), (301, false));
        let shown: Vec<serde_json::Value> = serde_json::from_slice(&page.data).unwrap();
        let ids: Vec<&str> = shown.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, tasks);
    }
}
