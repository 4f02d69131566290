//! Checkpoints: a workspace's in-memory state written to a local file, so that a restart
//! reads one file instead of loading and parsing every record from the store.
//!
//! The store stays the source of truth. A checkpoint is labelled with the store's commit
//! position ([`crate::store::Store::position`]) its state reflects, and is used only when
//! all of these hold; anything else is a full load from the store:
//! - the store still reports that position (nothing was committed since);
//! - the workspace's default region is the one the checkpoint was written with (numbers
//!   are held normalised by it);
//! - it was written by this build's format ([`FORMAT`], the crate version);
//! - its CRC-32 matches, and every record in it is well formed.
//!
//! # Map
//! - this module: the file format, [`write`] and [`restore`];
//! - [`files`]: where the files live and how they are replaced (atomically, synced);
//! - [`keeper`]: the background task that writes them when the store has moved on, and
//!   once more at shutdown.
//!
//! # Format (integers little-endian)
//! - `MAGIC` (8 bytes), [`FORMAT`] (u32), the crate version (u16 length, then UTF-8);
//! - the workspace id (16 bytes), the commit position (its count, u64, and its tag, 16
//!   bytes), the default region (u16 length, then UTF-8; empty for none);
//! - one section per table in [`TABLES`] order: its record count (u64), then each record
//!   as its packed bytes' length (u32) and the bytes ([`crate::packed`]), in the sync
//!   order (hidden records last): a restore allocates the records in that order, so a
//!   full sync after it reads memory front to back rather than at random. Every kind is
//!   written packed, whether or not the state holds it so; contacts carry their
//!   normalised numbers, as candidate rows do.
//! - the CRC-32 of everything before it (u32), then `TRAILER` (4 bytes).
//!
//! Everything else in the state (the orders, the search indexes, the secondary maps, the
//! clock) is derived from the records, and is rebuilt from them as a load rebuilds it.

pub mod files;
pub mod keeper;
#[cfg(test)]
mod tests;

use crate::model::*;
use crate::model::{AttachmentRec, CandidateRec, ContactRec, NoteRec};
use crate::packed::rec::Rec;
use crate::packed::Packed;
use crate::state::WorkspaceState;
use crate::store::CommitPosition;
use std::io::{self, Write};
use std::sync::Arc;
use uuid::Uuid;

/// The file's first eight bytes.
const MAGIC: &[u8; 8] = b"RCDCKPT\0";
/// The file's last four bytes: a file cut short never ends with them.
const TRAILER: &[u8; 4] = b"END\0";
/// The layout's version. Bump it whenever a kind's packed layout or this file's layout
/// changes: a checkpoint of another format is never read (`tests.rs` holds a fingerprint
/// of the packed layouts that fails until this is bumped).
pub const FORMAT: u32 = 2;

/// The tables in the order they are written and restored. Candidate rows come before
/// attachments (a cv takes its timestamps from its candidate row).
pub const TABLES: [RecordKind; 9] = RecordKind::ALL;

/// Why a checkpoint was not used.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Valid, but of another position, region, workspace or format: the state moved on.
    #[error("stale: {0}")]
    Stale(String),
    /// Not a whole, well-formed checkpoint (cut short, damaged, not one at all).
    #[error("damaged: {0}")]
    Damaged(String),
}

/// A writer that keeps the CRC-32 of everything written through it.
struct Summed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    written: u64,
}

impl<W> Summed<W> {
    fn new(inner: W) -> Self {
        Summed {
            inner,
            crc: crc32fast::Hasher::new(),
            written: 0,
        }
    }
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn put_text(out: &mut impl Write, s: &str) -> io::Result<()> {
    let len = u16::try_from(s.len()).map_err(|_| io::Error::other("header text too long"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(s.as_bytes())
}

fn region_text(state: &WorkspaceState) -> &str {
    state.workspace.default_region.as_deref().unwrap_or("")
}

/// Writes `state`, as of commit `position`, to `out`; returns the bytes written. `out`
/// should be buffered: records are written a few bytes at a time.
pub fn write(state: &WorkspaceState, position: CommitPosition, out: impl Write) -> io::Result<u64> {
    let mut out = Summed::new(out);
    write_head(state, &mut out)?;
    out.write_all(&position_bytes(position))?;
    write_body(state, &mut out)?;
    let crc = out.crc.clone().finalize();
    let mut inner = out.inner;
    inner.write_all(&crc.to_le_bytes())?;
    inner.write_all(TRAILER)?;
    inner.flush()?;
    Ok(out.written + 8)
}

/// What [`write_unpositioned`] wrote, to finish with [`finish_unpositioned`].
pub(crate) struct Unpositioned {
    /// Where the commit position's bytes go.
    position_at: u64,
    /// The CRC-32 of what comes before them, and of what comes after them.
    head: crc32fast::Hasher,
    body: crc32fast::Hasher,
    /// Bytes written, the position's placeholder included.
    written: u64,
}

/// Writes `state` as [`write`] does, with zeros where the commit position goes, for a
/// state whose position is not known yet (its commit is under way): the position is
/// written in its place, and the CRC-32 and trailer appended, by [`finish_unpositioned`].
pub(crate) fn write_unpositioned(
    state: &WorkspaceState,
    out: impl Write,
) -> io::Result<Unpositioned> {
    let mut out = Summed::new(out);
    write_head(state, &mut out)?;
    let position_at = out.written;
    let head = std::mem::replace(&mut out.crc, crc32fast::Hasher::new());
    out.inner.write_all(&[0; POSITION_BYTES])?;
    out.written += POSITION_BYTES as u64;
    write_body(state, &mut out)?;
    out.inner.flush()?;
    Ok(Unpositioned {
        position_at,
        head,
        body: out.crc,
        written: out.written,
    })
}

/// Completes a checkpoint that [`write_unpositioned`] wrote to `file`: its commit
/// `position` in place, then the CRC-32 of the whole and the trailer at its end. Returns
/// the bytes the file holds.
pub(crate) fn finish_unpositioned(
    file: &std::fs::File,
    written: Unpositioned,
    position: CommitPosition,
) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let position = position_bytes(position);
    file.write_all_at(&position, written.position_at)?;
    let mut crc = written.head;
    let mut at_position = crc32fast::Hasher::new();
    at_position.update(&position);
    crc.combine(&at_position);
    crc.combine(&written.body);
    let mut tail = [0; 8];
    tail[..4].copy_from_slice(&crc.finalize().to_le_bytes());
    tail[4..].copy_from_slice(TRAILER);
    file.write_all_at(&tail, written.written)?;
    Ok(written.written + 8)
}

/// The commit position's length in the header: its count and its tag.
const POSITION_BYTES: usize = 8 + 16;

fn position_bytes(position: CommitPosition) -> [u8; POSITION_BYTES] {
    let mut out = [0; POSITION_BYTES];
    out[..8].copy_from_slice(&position.seq.to_le_bytes());
    out[8..].copy_from_slice(position.tag.as_bytes());
    out
}

/// The header up to the commit position.
fn write_head(state: &WorkspaceState, out: &mut impl Write) -> io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&FORMAT.to_le_bytes())?;
    put_text(out, env!("CARGO_PKG_VERSION"))?;
    out.write_all(state.id().as_bytes())
}

/// The header after the commit position, then every table.
fn write_body(state: &WorkspaceState, mut out: &mut impl Write) -> io::Result<()> {
    put_text(&mut out, region_text(state))?;

    fn section<'a, I>(out: &mut impl Write, count: usize, records: I) -> io::Result<()>
    where
        I: Iterator<Item = Packing<'a>>,
    {
        out.write_all(&(count as u64).to_le_bytes())?;
        let mut written = 0;
        for r in records {
            let bytes = r.bytes();
            let len = u32::try_from(bytes.len())
                .map_err(|_| io::Error::other("a record of more than 4 GiB"))?;
            out.write_all(&len.to_le_bytes())?;
            out.write_all(bytes)?;
            written += 1;
        }
        // The tables are persistent values: nothing changes them while this runs.
        debug_assert_eq!(written, count);
        Ok(())
    }
    let packed = |p: Arc<Packed>| Packing::Owned(p);
    for kind in TABLES {
        match kind {
            RecordKind::User => section(
                &mut out,
                state.users.len(),
                state
                    .users
                    .in_sync_order()
                    .map(|(_, u)| packed(rec_bytes(Rec::<User>::pack(u)))),
            )?,
            RecordKind::Stage => section(
                &mut out,
                state.stages.len(),
                state
                    .stages
                    .iter()
                    .map(|(_, s)| packed(rec_bytes(Rec::<PipelineStage>::pack(s)))),
            )?,
            RecordKind::Company => section(
                &mut out,
                state.companies.len(),
                state
                    .companies
                    .in_sync_order()
                    .map(|(_, c)| packed(rec_bytes(Rec::<Company>::pack(c)))),
            )?,
            RecordKind::Contact => section(
                &mut out,
                state.contacts.len(),
                state.contacts.in_sync_order().map(|(_, c)| {
                    packed(rec_bytes(Rec::<Contact>::pack(
                        &c.raw,
                        c.phone.as_deref(),
                        c.mobile.as_deref(),
                    )))
                }),
            )?,
            RecordKind::Job => section(
                &mut out,
                state.jobs.len(),
                state
                    .jobs
                    .in_sync_order()
                    .map(|(_, j)| packed(rec_bytes(Rec::<Job>::pack(j)))),
            )?,
            RecordKind::Candidate => section(
                &mut out,
                state.candidates.len(),
                state
                    .candidates
                    .in_sync_order()
                    .map(|(_, c)| Packing::Borrowed(c.packed())),
            )?,
            RecordKind::Note => section(
                &mut out,
                state.notes.len(),
                state
                    .notes
                    .in_sync_order()
                    .map(|(_, n)| Packing::Borrowed(n.packed())),
            )?,
            RecordKind::Task => section(
                &mut out,
                state.tasks.len(),
                state
                    .tasks
                    .in_sync_order()
                    .map(|(_, t)| packed(rec_bytes(Rec::<Task>::pack(t)))),
            )?,
            RecordKind::Attachment => section(
                &mut out,
                state.attachments.len(),
                state
                    .attachments
                    .in_sync_order()
                    .map(|(_, a)| Packing::Borrowed(a.packed())),
            )?,
        }
    }
    Ok(())
}

/// A record's packed form on its way out: the state's own, or packed for the file.
enum Packing<'a> {
    Borrowed(&'a Packed),
    Owned(Arc<Packed>),
}

impl Packing<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Packing::Borrowed(p) => p.bytes(),
            Packing::Owned(p) => p.bytes(),
        }
    }
}

fn rec_bytes<T>(rec: Arc<Rec<T>>) -> Arc<Packed> {
    Rec::into_packed(rec)
}

/// A cursor over a checkpoint's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refused> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| Refused::Damaged("cut short".into()))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Refused> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self) -> Result<u32, Refused> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Refused> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn text(&mut self) -> Result<&'a str, Refused> {
        let n = u16::from_le_bytes(self.array()?) as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| Refused::Damaged("a header text".into()))
    }
}

/// What a checkpoint's header says, checked against what the store says now.
fn check_header(
    c: &mut Cursor<'_>,
    workspace: &Workspace,
    position: CommitPosition,
) -> Result<(), Refused> {
    if c.take(MAGIC.len())? != MAGIC {
        return Err(Refused::Damaged("not a checkpoint".into()));
    }
    let format = c.u32()?;
    let version = c.text()?;
    if format != FORMAT || version != env!("CARGO_PKG_VERSION") {
        return Err(Refused::Stale(format!(
            "written by format {format} of version {version}, this build reads format \
             {FORMAT} of version {}",
            env!("CARGO_PKG_VERSION")
        )));
    }
    let id = Uuid::from_bytes(c.array()?);
    if id != workspace.id {
        return Err(Refused::Stale(format!("of workspace {id}")));
    }
    let at = CommitPosition {
        seq: c.u64()?,
        tag: Uuid::from_bytes(c.array()?),
    };
    if at != position {
        return Err(Refused::Stale(format!(
            "written at commit position {at}, the store is at {position}"
        )));
    }
    let region = c.text()?;
    if region != workspace.default_region.as_deref().unwrap_or("") {
        return Err(Refused::Stale(format!(
            "written with default region {region:?}, the workspace's is {:?}",
            workspace.default_region
        )));
    }
    Ok(())
}

/// Records unpacked ahead of being put, at most.
const RESTORE_CHUNK: usize = 16_384;

/// A record read back, ready to put (small: chunks of them are collected).
enum Restored {
    Record(Box<Record>),
    Contact(Box<ContactRec>),
    Candidate(Arc<CandidateRec>),
    Note(Arc<NoteRec>),
    Attachment(Arc<AttachmentRec>),
}

/// Reads one record of kind `kind` back from its packed bytes (on any thread).
fn restore_record(kind: RecordKind, bytes: &[u8]) -> Option<Restored> {
    let packed = Packed::from_checked(bytes)?;
    let record = |r: Record| Restored::Record(Box::new(r));
    Some(match kind {
        RecordKind::User => record(Record::User(Rec::<User>::from_packed(packed).raw())),
        RecordKind::Stage => record(Record::Stage(
            Rec::<PipelineStage>::from_packed(packed).raw(),
        )),
        RecordKind::Company => record(Record::Company(Rec::<Company>::from_packed(packed).raw())),
        RecordKind::Contact => {
            let rec = Rec::<Contact>::from_packed(packed);
            Restored::Contact(Box::new(ContactRec {
                phone: rec.phone().map(Box::from),
                mobile: rec.mobile().map(Box::from),
                raw: rec.raw(),
            }))
        }
        RecordKind::Job => record(Record::Job(Rec::<Job>::from_packed(packed).raw())),
        RecordKind::Candidate => Restored::Candidate(Rec::from_packed(packed)),
        RecordKind::Note => Restored::Note(Rec::from_packed(packed)),
        RecordKind::Task => record(Record::Task(Rec::<Task>::from_packed(packed).raw())),
        RecordKind::Attachment => Restored::Attachment(Rec::from_packed(packed)),
    })
}

/// Rebuilds the state of `workspace` from a checkpoint's bytes, if the checkpoint is
/// whole and was written at the store's current `position` (see the module docs).
///
/// The records are unpacked and checked on every core; they are put into the state on
/// this thread, as a load puts them, with the orders and search indexes built once at
/// the end.
pub fn restore(
    bytes: &[u8],
    workspace: Workspace,
    position: CommitPosition,
) -> Result<WorkspaceState, Refused> {
    let started = std::time::Instant::now();
    let body = bytes
        .len()
        .checked_sub(8)
        .filter(|_| bytes.ends_with(TRAILER))
        .ok_or_else(|| Refused::Damaged("cut short".into()))?;
    let crc = u32::from_le_bytes(bytes[body..body + 4].try_into().expect("4 bytes"));
    let mut c = Cursor {
        bytes: &bytes[..body],
        at: 0,
    };
    // The header first: a stale checkpoint is refused without reading the rest.
    check_header(&mut c, &workspace, position)?;
    if crc32fast::hash(&bytes[..body]) != crc {
        return Err(Refused::Damaged("checksum mismatch".into()));
    }
    let mut sections: Vec<(RecordKind, Vec<&[u8]>)> = Vec::with_capacity(TABLES.len());
    for kind in TABLES {
        let count = usize::try_from(c.u64()?).map_err(|_| Refused::Damaged("a count".into()))?;
        // Every record takes at least its length: a count beyond that is damage, and is
        // not allowed to size an allocation.
        if count > (c.bytes.len() - c.at) / 4 {
            return Err(Refused::Damaged(format!("{} count", kind.as_str())));
        }
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let len = c.u32()? as usize;
            records.push(c.take(len)?);
        }
        sections.push((kind, records));
    }
    if c.at != c.bytes.len() {
        return Err(Refused::Damaged("bytes after the last table".into()));
    }
    let checked = started.elapsed();
    // A record that unpacks without a field its kind requires panics in its accessor;
    // whatever the reason, such a checkpoint is damaged, never a crash.
    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Notes and tasks touch nothing of the state but their own tables and maps (see
        // `WorkspaceState::absorb_notes_and_tasks`): they are put into a state of their
        // own on another thread while this one puts the rest.
        let fresh = |sections: &[(RecordKind, Vec<&[u8]>)]| {
            let mut state = WorkspaceState::new(workspace.clone());
            state.position = position.seq;
            state.begin_bulk();
            for (kind, records) in sections {
                state.reserve(*kind, records.len());
            }
            state
        };
        let records: usize = sections.iter().map(|(_, r)| r.len()).sum();
        if records < RESTORE_ON_THREADS_FROM {
            // A small workspace: threads would cost more than they save (a fleet of
            // small workspaces restores thousands of them).
            let mut state = fresh(&sections);
            for (kind, records) in &sections {
                for b in records {
                    let r = restore_record(*kind, b)
                        .ok_or_else(|| Refused::Damaged(format!("a {} record", kind.as_str())))?;
                    put_restored(&mut state, r);
                }
            }
            state.end_bulk();
            return Ok(state);
        }
        let (side, main): (Vec<_>, Vec<_>) = sections
            .into_iter()
            .partition(|(kind, _)| matches!(kind, RecordKind::Note | RecordKind::Task));
        let (mut state, mut others) = (fresh(&main), fresh(&side));
        let (done, side_done) = std::thread::scope(|s| {
            let side_done = s.spawn(|| put_sections(&mut others, &side));
            let done = put_sections(&mut state, &main);
            (done, side_done.join())
        });
        done?;
        side_done.unwrap_or_else(|_| Err(Refused::Damaged("a malformed record".into())))?;
        state.absorb_notes_and_tasks(others);
        let put_in = started.elapsed();
        state.end_bulk();
        tracing::debug!(
            checked_ms = checked.as_millis() as u64,
            put_ms = (put_in - checked).as_millis() as u64,
            indexed_ms = (started.elapsed() - put_in).as_millis() as u64,
            "checkpoint restored"
        );
        Ok(state)
    }));
    built.unwrap_or_else(|_| Err(Refused::Damaged("a malformed record".into())))
}

/// Records from which a restore unpacks and puts them on several threads.
const RESTORE_ON_THREADS_FROM: usize = 20_000;

/// Puts one restored record into `state`.
fn put_restored(state: &mut WorkspaceState, r: Restored) {
    match r {
        Restored::Record(r) => state.put(*r),
        Restored::Contact(c) => state.put_contact_rec(*c),
        Restored::Candidate(c) => state.put_candidate_rec(c),
        Restored::Note(n) => state.put_note(n),
        Restored::Attachment(a) => state.put_attachment_rec(a),
    }
}

/// Puts every record of `sections` into `state`, chunk by chunk: the next chunk is
/// unpacked on the pool while this thread puts the last one, and what is unpacked ahead
/// stays small.
fn put_sections(
    state: &mut WorkspaceState,
    sections: &[(RecordKind, Vec<&[u8]>)],
) -> Result<(), Refused> {
    use rayon::prelude::*;
    let unpack = |(kind, chunk): (RecordKind, &[&[u8]])| {
        chunk
            .par_iter()
            .with_min_len(256)
            .map(|b| restore_record(kind, b))
            .collect::<Option<Vec<Restored>>>()
            .ok_or_else(|| Refused::Damaged(format!("a {} record", kind.as_str())))
    };
    let put = |state: &mut WorkspaceState, restored: Vec<Restored>| {
        for r in restored {
            put_restored(state, r);
        }
    };
    let mut chunks = sections
        .iter()
        .flat_map(|(kind, records)| records.chunks(RESTORE_CHUNK).map(move |c| (*kind, c)));
    let mut ready = chunks.next().map(unpack).transpose()?;
    while let Some(restored) = ready.take() {
        let next = chunks.next();
        let (_, unpacked) = rayon::join(|| put(state, restored), || next.map(unpack));
        ready = unpacked.transpose()?;
    }
    Ok(())
}
