//! Parsing a snapshot element by element: a million-person file is never held as one
//! JSON tree, nor as one buffer. The scanner ([`super::scan`]) finds the top-level
//! members and each array's elements in a window over the stream; elements are decoded
//! in batches on every core, each on its own, so an error names its array, index and
//! field (the path inside the entry, as serde reports it).

use super::scan::{ScanError, Scanner};
use super::{AttachmentDoc, AttachmentIn, Entry, Snapshot, SnapshotError, FORMAT};
use crate::model::*;
use crate::model::{AttachmentRec, CandidateRec, NoteRec};
use crate::phone::{NumberMemo, Region};
use base64::Engine as _;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;

/// Elements decoded together, at most (a batch is handed to every core at once; a few
/// in tests, so that every array there spans several batches)...
const BATCH_ELEMENTS: usize = if cfg!(test) { 3 } else { 8192 };
/// ...and the bytes a batch may span (the window's size, but for one long element).
const BATCH_BYTES: usize = 16 << 20;

/// Parses a snapshot from a reader.
pub fn parse_reader<R: Read>(r: R) -> Result<Snapshot, SnapshotError> {
    parse_with(Scanner::new(r))
}

/// Parses a snapshot from bytes in memory.
pub fn parse_slice(b: &[u8]) -> Result<Snapshot, SnapshotError> {
    parse_with(Scanner::new(b))
}

fn malformed(e: ScanError) -> SnapshotError {
    SnapshotError {
        array: None,
        index: None,
        field: None,
        message: format!("not a valid snapshot document: {}", e.0),
    }
}

fn parse_with<R: Read>(mut sc: Scanner<R>) -> Result<Snapshot, SnapshotError> {
    let mut snap = Snapshot::default();
    let mut format: Option<String> = None;
    let mut seen = HashSet::new();
    sc.expect(b'{').map_err(malformed)?;
    if sc.peek().map_err(malformed)? == Some(b'}') {
        sc.expect(b'}').map_err(malformed)?;
    } else {
        loop {
            let key = sc.value().map_err(malformed)?;
            let key: String = serde_json::from_slice(&sc.window()[key])
                .map_err(|e| malformed(ScanError(format!("a member name: {e}"))))?;
            sc.expect(b':').map_err(malformed)?;
            if !seen.insert(key.clone()) {
                return Err(SnapshotError::top(&key, "appears twice"));
            }
            macro_rules! array {
                ($field:ident) => {
                    snap.$field = parse_array(&mut sc, stringify!($field), |r, _| Ok(r))?
                };
                ($field:ident, $convert:expr) => {
                    snap.$field = parse_array(&mut sc, stringify!($field), $convert)?
                };
            }
            match key.as_str() {
                "format" => {
                    let v = sc.value().map_err(malformed)?;
                    match serde_json::from_slice::<serde_json::Value>(&sc.window()[v]) {
                        Ok(serde_json::Value::String(s)) => format = Some(s),
                        Ok(_) => return Err(SnapshotError::top("format", "must be a string")),
                        Err(e) => return Err(malformed(ScanError(format!("format: {e}")))),
                    }
                }
                "workspace" => {
                    let v = sc.value().map_err(malformed)?;
                    let mut de = serde_json::Deserializer::from_slice(&sc.window()[v]);
                    match serde_path_to_error::deserialize::<_, Workspace>(&mut de) {
                        Ok(w) => snap.workspace = Some(w),
                        Err(e) => {
                            return Err(SnapshotError {
                                array: None,
                                index: None,
                                field: Some(join_path("workspace", &e.path().to_string())),
                                message: e.inner().to_string(),
                            })
                        }
                    }
                }
                "users" => array!(users),
                "api_keys" => array!(api_keys),
                "pipeline_stages" => array!(pipeline_stages),
                "companies" => array!(companies),
                "contacts" => array!(contacts),
                "jobs" => array!(jobs),
                "candidates" => {
                    // Normalised with the workspace's region when it came first; the
                    // plan normalises them otherwise.
                    let region = snap.workspace.as_ref().map(|w| {
                        w.default_region
                            .as_deref()
                            .and_then(crate::phone::parse_region)
                    });
                    snap.numbers_region = region;
                    array!(candidates, |c, memo| Ok(pack_candidate(&c, region, memo)))
                }
                "notes" => array!(notes, |n, _| Ok(NoteRec::pack(&n))),
                "tasks" => array!(tasks),
                "attachments" => array!(attachments, |a, _| attachment(a)),
                other => return Err(SnapshotError::top(other, "unknown top-level field")),
            }
            sc.compact();
            match sc.peek().map_err(malformed)? {
                Some(b',') => sc.expect(b',').map_err(malformed)?,
                Some(b'}') => {
                    sc.expect(b'}').map_err(malformed)?;
                    break;
                }
                _ => {
                    return Err(malformed(ScanError(
                        "expected `,` or `}` after a member".into(),
                    )))
                }
            }
        }
    }
    if sc.peek().map_err(malformed)?.is_some() {
        return Err(malformed(ScanError(
            "trailing characters after the document".into(),
        )));
    }
    match format.as_deref() {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(SnapshotError::top(
                "format",
                format!("unsupported format {other:?}: expected {FORMAT:?}"),
            ))
        }
        None => {
            return Err(SnapshotError::top(
                "format",
                format!("missing: expected {FORMAT:?}"),
            ))
        }
    }
    if snap.workspace.is_none() {
        return Err(SnapshotError::top(
            "workspace",
            "missing: the target workspace is required",
        ));
    }
    Ok(snap)
}

fn join_path(base: &str, sub: &str) -> String {
    if sub.is_empty() || sub == "." {
        base.to_string()
    } else {
        format!("{base}.{sub}")
    }
}

/// A candidate row packed, its numbers normalised with `region` (`None`: not
/// normalised).
pub(super) fn pack_candidate(
    c: &Candidate,
    region: Option<Option<Region>>,
    memo: &mut NumberMemo,
) -> Arc<CandidateRec> {
    let (phone, mobile) = match region {
        Some(region) => (
            memo.normalise(c.phone.as_deref(), region),
            memo.normalise(c.mobile.as_deref(), region),
        ),
        None => (None, None),
    };
    CandidateRec::pack(c, phone.as_deref(), mobile.as_deref())
}

/// An attachment's record as it will be stored, and its bytes decoded.
fn attachment(a: AttachmentDoc) -> Result<AttachmentIn, (String, String)> {
    let content = match &a.content_base64 {
        Some(b64) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| {
                    (
                        "content_base64".to_string(),
                        format!("is not valid base64: {e}"),
                    )
                })?,
        ),
        None => None,
    };
    let rec = AttachmentRec::pack(&Attachment {
        size: a.size.or(content.as_ref().map(|b| b.len() as u64)),
        has_content: content.is_some(),
        id: a.id,
        parent_type: a.parent_type,
        parent_id: a.parent_id,
        filename: a.filename,
        content_type: a.content_type,
        kind: a.kind,
        storage_ref: a.storage_ref,
        created_at: a.created_at,
        updated_at: a.updated_at,
    });
    Ok(AttachmentIn { rec, content })
}

/// Elements of a batch decoded by one task, sharing one [`NumberMemo`].
const TASK_ELEMENTS: usize = 256;

/// One array (`null` is an absent one): its elements found by the scanner and decoded
/// in batches on every core, in order, each upsert turned into what the snapshot keeps
/// by `convert` (an error there names the element and the field it gives).
///
/// The scanner finds the next batches while the pool decodes the ones before them (at
/// most [`BATCHES_IN_FLIGHT`] at a time, each a copy of its bytes): scanning in turn
/// with decoding would leave every core but one idle while it scans, and wake them all
/// again for each batch.
fn parse_array<T, U, R>(
    sc: &mut Scanner<R>,
    name: &'static str,
    convert: impl Fn(T, &mut NumberMemo) -> Result<U, (String, String)> + Sync,
) -> Result<Vec<Entry<U>>, SnapshotError>
where
    T: DeserializeOwned,
    U: Send,
    R: Read,
{
    match sc.peek().map_err(malformed)? {
        Some(b'[') => sc.expect(b'[').map_err(malformed)?,
        Some(_) => {
            let v = sc.value().map_err(malformed)?;
            if &sc.window()[v] == b"null" {
                return Ok(Vec::new());
            }
            return Err(SnapshotError::top(name, "must be an array"));
        }
        None => return Err(malformed(ScanError("the document ends early".into()))),
    }
    let out = Vec::new();
    if sc.peek().map_err(malformed)? == Some(b']') {
        sc.expect(b']').map_err(malformed)?;
        return Ok(out);
    }
    let convert = &convert;
    rayon::in_place_scope(|scope| {
        let (sender, results) = std::sync::mpsc::channel();
        let mut decoded = InOrder {
            name,
            results,
            waiting: std::collections::BTreeMap::new(),
            in_flight: 0,
            next: 0,
            out,
        };
        let (mut scanned, mut batches, mut done) = (0, 0, false);
        while !done {
            let batch = match scan_batch(sc, name, &mut done) {
                Ok(batch) => batch,
                Err(e) => {
                    // An element before the malformed one that does not decode is the
                    // first error in the document.
                    decoded.drain()?;
                    return Err(e);
                }
            };
            let (first, number, sender) = (scanned, batches, sender.clone());
            scanned += batch.ranges.len();
            batches += 1;
            scope.spawn(move |_| {
                let entries = batch.decode(convert);
                // Unheard only when an earlier batch's error ended the array.
                let _ = sender.send((number, Decoded { first, entries }));
            });
            decoded.in_flight += 1;
            if decoded.in_flight >= BATCHES_IN_FLIGHT {
                decoded.take_one()?;
            }
        }
        decoded.drain()?;
        Ok(decoded.out)
    })
}

/// An array's decoded batches, put back in document order as they come.
struct InOrder<U> {
    name: &'static str,
    /// Each batch by its number, once decoded.
    results: std::sync::mpsc::Receiver<(usize, Decoded<U>)>,
    /// Batches decoded before one that comes before them.
    waiting: std::collections::BTreeMap<usize, Decoded<U>>,
    /// Batches handed to the pool and not yet received.
    in_flight: usize,
    /// The number of the next batch to append.
    next: usize,
    out: Vec<Entry<U>>,
}

impl<U> InOrder<U> {
    /// Waits for one more batch, then appends every batch now in order; an element that
    /// did not decode ends the array with its error.
    fn take_one(&mut self) -> Result<(), SnapshotError> {
        let (number, batch) = self
            .results
            .recv()
            .expect("a decoding task always sends its batch");
        self.in_flight -= 1;
        self.waiting.insert(number, batch);
        while let Some(Decoded { first, entries }) = self.waiting.remove(&self.next) {
            self.next += 1;
            for (i, e) in entries.into_iter().enumerate() {
                match e {
                    Ok(e) => self.out.push(e),
                    Err((field, message)) => {
                        return Err(SnapshotError::at(self.name, first + i, &field, message))
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes every batch still in flight.
    fn drain(&mut self) -> Result<(), SnapshotError> {
        while self.in_flight > 0 {
            self.take_one()?;
        }
        Ok(())
    }
}

/// Batches of one array decoding at once, at most: enough for the scanner to stay ahead
/// of the pool, few enough to bound the copies held.
const BATCHES_IN_FLIGHT: usize = 3;

/// A batch's decoded elements, and the index of its first in the array.
struct Decoded<U> {
    first: usize,
    entries: Vec<Result<Entry<U>, (String, String)>>,
}

/// The elements of one batch: a copy of the bytes they span, and where each lies in it.
struct Batch {
    bytes: Vec<u8>,
    ranges: Vec<std::ops::Range<usize>>,
}

impl Batch {
    /// Decodes the elements on every core, in order; tasks of [`TASK_ELEMENTS`] share a
    /// [`NumberMemo`].
    fn decode<T, U>(
        &self,
        convert: &(impl Fn(T, &mut NumberMemo) -> Result<U, (String, String)> + Sync),
    ) -> Vec<Result<Entry<U>, (String, String)>>
    where
        T: DeserializeOwned,
        U: Send,
    {
        self.ranges
            .par_chunks(TASK_ELEMENTS)
            .flat_map_iter(|task| {
                let mut memo = NumberMemo::default();
                task.iter()
                    .map(|r| match entry_from_raw::<T>(&self.bytes[r.clone()])? {
                        Entry::Upsert(t) => convert(t, &mut memo).map(Entry::Upsert),
                        Entry::Delete(id) => Ok(Entry::Delete(id)),
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// Finds the next batch of elements of the array `name` (at most [`BATCH_ELEMENTS`]
/// spanning [`BATCH_BYTES`], but for one long element), copies them out of the window
/// and drops them from it. Sets `done` at the array's closing bracket.
fn scan_batch<R: Read>(
    sc: &mut Scanner<R>,
    name: &str,
    done: &mut bool,
) -> Result<Batch, SnapshotError> {
    let mut ranges = Vec::with_capacity(BATCH_ELEMENTS);
    let mut bytes = 0;
    while !*done && ranges.len() < BATCH_ELEMENTS && bytes < BATCH_BYTES {
        let v = sc.value().map_err(malformed)?;
        bytes += v.len();
        ranges.push(v);
        match sc.peek().map_err(malformed)? {
            Some(b',') => sc.expect(b',').map_err(malformed)?,
            Some(b']') => {
                sc.expect(b']').map_err(malformed)?;
                *done = true;
            }
            _ => {
                return Err(malformed(ScanError(format!(
                    "{name}: expected `,` or `]` after an element"
                ))))
            }
        }
    }
    // The elements lie in order in the window: one copy from the first one's start to
    // the last one's end.
    let start = ranges.first().map_or(0, |r| r.start);
    let end = ranges.last().map_or(0, |r| r.end);
    let batch = Batch {
        bytes: sc.window()[start..end].to_vec(),
        ranges: ranges
            .into_iter()
            .map(|r| r.start - start..r.end - start)
            .collect(),
    };
    sc.compact();
    Ok(batch)
}

/// One array element, parsed straight into its record type; only an element that does
/// not parse as a record (a removal, `"deleted": false`, or an error to report) is looked
/// at as a JSON tree.
fn entry_from_raw<T: DeserializeOwned>(raw: &[u8]) -> Result<Entry<T>, (String, String)> {
    let mut de = serde_json::Deserializer::from_slice(raw);
    match T::deserialize(&mut de).and_then(|r| de.end().map(|_| r)) {
        Ok(r) => Ok(Entry::Upsert(r)),
        Err(_) => {
            let v: serde_json::Value =
                serde_json::from_slice(raw).map_err(|e| (String::new(), e.to_string()))?;
            entry_from_value(v)
        }
    }
}

/// One array element: `{"id": …, "deleted": true}` removes, anything else is a record.
fn entry_from_value<T: DeserializeOwned>(
    mut v: serde_json::Value,
) -> Result<Entry<T>, (String, String)> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| (String::new(), "must be an object".to_string()))?;
    match obj.get("deleted") {
        None => {}
        Some(serde_json::Value::Bool(true)) => {
            return match obj.get("id") {
                Some(serde_json::Value::String(id)) if !id.is_empty() => {
                    Ok(Entry::Delete(id.clone()))
                }
                _ => Err((
                    "id".into(),
                    "a record marked deleted must carry its id (a string)".into(),
                )),
            };
        }
        Some(serde_json::Value::Bool(false)) => {
            obj.remove("deleted");
        }
        Some(_) => return Err(("deleted".into(), "must be true or false".into())),
    }
    serde_path_to_error::deserialize::<_, T>(v)
        .map(Entry::Upsert)
        .map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let inner = e.into_inner().to_string();
            // serde names the missing or unknown field in its message; lift it into the
            // location so every error names its field.
            let field = if path.is_empty() {
                field_from_message(&inner).unwrap_or_default()
            } else {
                path
            };
            (field, inner)
        })
}

fn field_from_message(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_string())
}
