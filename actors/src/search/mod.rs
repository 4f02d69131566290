//! In-call search: a workspace's phone and e-mail indexes, and the matching rules.
//!
//! ## Map
//! - [`index`]: `KeyIndex`, an immutable `fst::Map` base plus a persistent delta, with
//!   background rebuilds.
//! - [`keys`]: what stored numbers and addresses become as keys (normalised once, at
//!   write time), and what a query becomes (digits only, no parsing).
//! - [`results`]: the spec's matching rules 1–5 and the response shapes of both search
//!   endpoints, serialised straight from the state.
//!
//! The indexes live inside [`crate::state::WorkspaceState`] and change with it: every
//! `put` or `delete` of a candidate row, contact or company updates them, so a search run
//! on a published state sees every committed write (read-your-writes). Loading a workspace
//! or a large import defers the updates and builds the base once at the end.

pub mod index;
pub mod keys;
pub mod results;

#[cfg(test)]
mod tests;

pub use index::{KeyIndex, Owner, RebuildJob, Rebuilt};
pub use keys::{EmailKey, PhoneKey};

use smallvec::SmallVec;

/// The keys one owner holds.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct KeySet {
    pub phones: SmallVec<[PhoneKey; 4]>,
    pub emails: SmallVec<[EmailKey; 1]>,
}

impl KeySet {
    pub fn add_phone(&mut self, normalised: Option<&str>) {
        if let Some(k) = normalised.and_then(keys::phone_key) {
            if !self.phones.contains(&k) {
                self.phones.push(k);
            }
        }
    }

    pub fn add_email(&mut self, address: Option<&str>) {
        if let Some(k) = address.and_then(keys::email_key) {
            if !self.emails.contains(&k) {
                self.emails.push(k);
            }
        }
    }
}

/// Both indexes of a workspace.
#[derive(Clone, Debug, Default)]
pub struct SearchIndexes {
    pub phone: KeyIndex<PhoneKey>,
    pub email: KeyIndex<EmailKey>,
    /// While set, record changes do not touch the indexes; whoever set it rebuilds them
    /// from the records once it is done (bulk loads).
    deferred: bool,
}

impl SearchIndexes {
    /// Both indexes, built elsewhere (everything in their bases), maintained from now on.
    pub fn from_parts(phone: KeyIndex<PhoneKey>, email: KeyIndex<EmailKey>) -> Self {
        SearchIndexes {
            phone,
            email,
            deferred: false,
        }
    }

    pub fn is_deferred(&self) -> bool {
        self.deferred
    }

    pub fn defer(&mut self) {
        self.deferred = true;
    }

    /// Moves `owner` from the keys it held to the keys it holds now.
    pub fn update(&mut self, owner: Owner, before: &KeySet, after: &KeySet) {
        if self.deferred || before == after {
            return;
        }
        for k in before.phones.iter().filter(|k| !after.phones.contains(k)) {
            self.phone.remove(k.clone(), owner);
        }
        for k in after.phones.iter().filter(|k| !before.phones.contains(k)) {
            self.phone.add(k.clone(), owner);
        }
        for k in before.emails.iter().filter(|k| !after.emails.contains(k)) {
            self.email.remove(k.clone(), owner);
        }
        for k in after.emails.iter().filter(|k| !before.emails.contains(k)) {
            self.email.add(k.clone(), owner);
        }
    }

    /// A snapshot to merge off-thread, when either delta has grown enough.
    pub fn rebuild_job(&self) -> Option<SearchRebuild> {
        let phone = self.phone.wants_rebuild().then(|| self.phone.rebuild_job());
        let email = self.email.wants_rebuild().then(|| self.email.rebuild_job());
        (phone.is_some() || email.is_some()).then_some(SearchRebuild { phone, email })
    }

    /// Installs what a rebuild produced; `true` when anything changed.
    pub fn install(&mut self, done: SearchRebuilt) -> bool {
        let mut changed = false;
        if let Some(p) = done.phone {
            changed |= self.phone.install(p);
        }
        if let Some(e) = done.email {
            changed |= self.email.install(e);
        }
        changed
    }

    /// Index sizes, for reports and metrics.
    pub fn stats(&self) -> IndexStats {
        IndexStats {
            phone_keys: self.phone.base().len(),
            phone_postings: self.phone.base().postings_len(),
            phone_fst_bytes: self.phone.base().fst_bytes(),
            phone_heap_bytes: self.phone.base().heap_bytes(),
            phone_delta: self.phone.delta_len(),
            email_keys: self.email.base().len(),
            email_postings: self.email.base().postings_len(),
            email_fst_bytes: self.email.base().fst_bytes(),
            email_heap_bytes: self.email.base().heap_bytes(),
            email_delta: self.email.delta_len(),
        }
    }
}

/// Sizes of a workspace's indexes (base sizes, plus delta entries).
#[derive(Clone, Copy, Debug, Default)]
pub struct IndexStats {
    pub phone_keys: usize,
    pub phone_postings: usize,
    pub phone_fst_bytes: usize,
    pub phone_heap_bytes: usize,
    pub phone_delta: usize,
    pub email_keys: usize,
    pub email_postings: usize,
    pub email_fst_bytes: usize,
    pub email_heap_bytes: usize,
    pub email_delta: usize,
}

/// Snapshots of the indexes whose delta wants merging.
pub struct SearchRebuild {
    phone: Option<RebuildJob<PhoneKey>>,
    email: Option<RebuildJob<EmailKey>>,
}

impl SearchRebuild {
    /// Merges each snapshot into a new base (CPU work, seconds for millions of keys).
    pub fn run(self) -> SearchRebuilt {
        SearchRebuilt {
            phone: self.phone.map(RebuildJob::run),
            email: self.email.map(RebuildJob::run),
        }
    }
}

/// New bases, for [`SearchIndexes::install`].
pub struct SearchRebuilt {
    phone: Option<Rebuilt>,
    email: Option<Rebuilt>,
}
