//! Records' JSON as the API shows it, kept per row version, so that a sync copies bytes
//! instead of deriving and escaping every record again.
//!
//! A rendering depends on two things:
//! - its row: every change to a row makes a new row with an empty [`RenderCache`]
//!   (`table::Row`), including a cv attachment moved by its candidate row;
//! - what its view reads elsewhere in the workspace (a stage's name, a user's status, a
//!   job's recruiter, a company's name, a contact's company). [`DerivedInputs`] counts
//!   the changes to each of those tables; a view says which tables it reads
//!   ([`Rendered::reads`]), and a cached rendering is used only while the sum of their
//!   counters is the one it was made under. The counters only grow, so an unchanged sum
//!   means none of them moved.
//!
//! Which tables a view reads depends on its row alone, so the cache keeps that too: a
//! cached rendering is checked without touching the record, and a full sync reads, per
//! record, its place in the order, the cache and the bytes.
//!
//! States are persistent values: an older state and a newer one share map nodes, and
//! with them rows and their caches. A cache holds one rendering and the sum it was made
//! under; a reader of either state uses it only when the sums agree, and otherwise
//! renders afresh and replaces it. The cost is memory: about the size of the JSON of
//! every row rendered so far.

use parking_lot::Mutex;
use serde::Serialize;
use std::sync::Arc;

/// Changes, counted per table, to what views derive from other records.
#[derive(Clone, Copy, Debug, Default)]
pub struct DerivedInputs {
    pub stages: u64,
    pub users: u64,
    pub jobs: u64,
    pub companies: u64,
    pub contacts: u64,
}

/// The tables a view reads besides its row: a set of the `Reads::*` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads(u8);

impl Reads {
    pub const NOTHING: Reads = Reads(0);
    pub const STAGES: Reads = Reads(1);
    pub const USERS: Reads = Reads(2);
    pub const JOBS: Reads = Reads(4);
    pub const COMPANIES: Reads = Reads(8);
    pub const CONTACTS: Reads = Reads(16);

    pub const fn and(self, other: Reads) -> Reads {
        Reads(self.0 | other.0)
    }

    fn has(self, r: Reads) -> bool {
        self.0 & r.0 != 0
    }
}

impl DerivedInputs {
    /// The sum of the counters of the tables in `reads`.
    pub fn sum(&self, reads: Reads) -> u64 {
        [
            (Reads::STAGES, self.stages),
            (Reads::USERS, self.users),
            (Reads::JOBS, self.jobs),
            (Reads::COMPANIES, self.companies),
            (Reads::CONTACTS, self.contacts),
        ]
        .iter()
        .filter(|(r, _)| reads.has(*r))
        .map(|(_, n)| n)
        .sum()
    }
}

/// A view whose JSON can be cached with its row.
pub trait Rendered: Serialize {
    /// The tables this view reads besides its row. It must depend on the row's record
    /// alone: the cache keeps the answer for as long as it keeps the rendering.
    fn reads(&self) -> Reads;
}

/// The last rendering of one row version, kept inside the row.
///
/// The rendering is one shared allocation: a 9-byte header (the tables read, the sum
/// of their counters) and then the JSON, so a cache hit costs one memory access beyond
/// the row itself. Clones of a row (states copy rows when they copy a map node) start
/// with the same rendering and go their own way after.
#[derive(Debug, Default)]
pub struct RenderCache(Mutex<Option<Arc<[u8]>>>);

const HEADER: usize = 9;

impl Clone for RenderCache {
    fn clone(&self) -> Self {
        RenderCache(Mutex::new(self.0.lock().clone()))
    }
}

impl RenderCache {
    /// Appends the row's JSON as the state with counters `derived` shows it: from the
    /// cache when it holds that rendering, else made by `render` (which appends it to
    /// `out` and says what it read) and kept.
    pub fn write<E>(
        &self,
        derived: &DerivedInputs,
        out: &mut Vec<u8>,
        render: impl FnOnce(&mut Vec<u8>) -> Result<Reads, E>,
    ) -> Result<(), E> {
        if let Some(c) = &*self.0.lock() {
            let (header, json) = c.split_at(HEADER);
            let reads = Reads(header[0]);
            let inputs = u64::from_le_bytes(header[1..].try_into().expect("8 bytes"));
            if inputs == derived.sum(reads) {
                out.extend_from_slice(json);
                return Ok(());
            }
        }
        // Rendered outside the lock: another reader of the same row waits for nothing
        // longer than a copy.
        let start = out.len();
        let reads = render(out)?;
        let mut kept = Vec::with_capacity(HEADER + out.len() - start);
        kept.push(reads.0);
        kept.extend_from_slice(&derived.sum(reads).to_le_bytes());
        kept.extend_from_slice(&out[start..]);
        *self.0.lock() = Some(Arc::from(kept));
        Ok(())
    }

    /// Whether a rendering is held (whatever it was made under).
    #[cfg(test)]
    fn is_filled(&self) -> bool {
        self.0.lock().is_some()
    }
}

#[cfg(test)]
mod tests;
