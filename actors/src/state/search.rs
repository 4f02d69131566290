//! Keeping the phone and e-mail indexes in line with the records: the keys of each
//! person, contact and company, updated as records are put and removed, or built afresh
//! from the tables.

use super::bulk::SearchBuild;
use super::WorkspaceState;
use crate::model::Company;
use crate::model::ContactRec;
use crate::search::keys::{email_key, phone_key};
use crate::search::{EmailKey, KeyIndex, KeySet, Owner, PhoneKey, SearchIndexes};
use smallvec::SmallVec;
use uuid::Uuid;

/// Every number and address of a contact.
pub(super) fn contact_keys(c: &ContactRec) -> KeySet {
    let mut keys = KeySet::default();
    keys.add_phone(c.phone.as_deref());
    keys.add_phone(c.mobile.as_deref());
    keys.add_email(c.raw.email.as_deref());
    keys
}

impl WorkspaceState {
    /// Stops index maintenance for a bulk load; [`Self::rebuild_search`] ends it.
    pub fn defer_search(&mut self) {
        self.search.defer();
    }

    /// Builds both search indexes afresh from the records (everything in the base).
    ///
    /// One pass over the rows rather than person by person (a person's duplicate keys
    /// collapse when the pairs are sorted), and the two indexes on two threads: reading
    /// the numbers and addresses out of scattered records is bound by memory latency.
    pub fn rebuild_search(&mut self) {
        self.build_search(SearchBuild::Together);
    }

    /// [`Self::rebuild_search`], the two indexes built as `how` says.
    pub(super) fn build_search(&mut self, how: SearchBuild) {
        let this = &*self;
        let (phone, email) = match how {
            SearchBuild::Together => std::thread::scope(|s| {
                let email = s.spawn(|| KeyIndex::build(this.email_pairs()));
                let phone = KeyIndex::build(this.phone_pairs());
                (phone, email.join().expect("index build does not panic"))
            }),
            SearchBuild::OneAfterTheOther => (
                KeyIndex::build(this.phone_pairs()),
                KeyIndex::build(this.email_pairs()),
            ),
        };
        self.search = SearchIndexes::from_parts(phone, email);
    }

    pub(super) fn phone_pairs(&self) -> Vec<(PhoneKey, Owner)> {
        // Counted first: a vector grown by doubling would hold up to three times the
        // pairs at the moment it grows, at the peak of a load.
        let numbers = self
            .candidates
            .iter()
            .map(|(_, c)| usize::from(c.phone().is_some()) + usize::from(c.mobile().is_some()))
            .sum::<usize>()
            + self
                .contacts
                .iter()
                .map(|(_, c)| usize::from(c.phone.is_some()) + usize::from(c.mobile.is_some()))
                .sum::<usize>()
            + self.companies.len();
        let mut out = Vec::with_capacity(numbers);
        let mut add = |owner: Owner, number: Option<&str>| {
            out.extend(number.and_then(phone_key).map(|k| (k, owner)));
        };
        for (_, c) in self.candidates.iter() {
            let owner = Owner::Person(c.person_id());
            add(owner, c.phone());
            add(owner, c.mobile());
        }
        for (id, c) in self.contacts.iter() {
            add(Owner::Contact(*id), c.phone.as_deref());
            add(Owner::Contact(*id), c.mobile.as_deref());
        }
        for (id, c) in self.companies.iter() {
            add(
                Owner::Company(*id),
                self.normalise(c.phone.as_deref()).as_deref(),
            );
        }
        out
    }

    pub(super) fn email_pairs(&self) -> Vec<(EmailKey, Owner)> {
        let mut out = Vec::with_capacity(self.candidates.len() + self.contacts.len());
        for (_, c) in self.candidates.iter() {
            let owner = Owner::Person(c.person_id());
            out.extend(c.email().and_then(email_key).map(|k| (k, owner)));
        }
        for (id, c) in self.contacts.iter() {
            let owner = Owner::Contact(*id);
            out.extend(
                c.raw
                    .email
                    .as_deref()
                    .and_then(email_key)
                    .map(|k| (k, owner)),
            );
        }
        out
    }

    /// Every number and address of a person, across all of the person's rows.
    pub(super) fn person_keys(&self, person: Uuid) -> KeySet {
        let mut keys = KeySet::default();
        for (_, r) in self.person_rows_all(person) {
            keys.add_phone(r.phone());
            keys.add_phone(r.mobile());
            keys.add_email(r.email());
        }
        keys
    }

    pub(super) fn company_keys(&self, c: &Company) -> KeySet {
        let mut keys = KeySet::default();
        keys.add_phone(self.normalise(c.phone.as_deref()).as_deref());
        keys
    }

    /// The keys of the given persons, before a change (nothing while deferred).
    pub(super) fn persons_keys(&self, persons: &[Uuid]) -> SmallVec<[KeySet; 2]> {
        if self.search.is_deferred() {
            return SmallVec::new();
        }
        persons.iter().map(|p| self.person_keys(*p)).collect()
    }

    /// Brings the index in line with the given persons' rows after a change.
    pub(super) fn reindex_persons(&mut self, persons: &[Uuid], before: SmallVec<[KeySet; 2]>) {
        if self.search.is_deferred() {
            return;
        }
        for (p, before) in persons.iter().zip(before) {
            let after = self.person_keys(*p);
            self.search.update(Owner::Person(*p), &before, &after);
        }
    }
}
