//! What a commit changed beyond what it wrote: the derived changes (records whose API
//! representation moved because another record did) and the tombstones it sets and
//! clears, from the workspace's states before and after the commit.

use crate::entities;
use crate::entries::{Change, LoggedId};
use crate::model::{Entity, ParentType, RecordKind};
use crate::state::WorkspaceState;
use crate::store::Touched;
use crate::time::Stamp;
use crate::tombstones::TombstoneChange;
use std::collections::HashSet;
use std::sync::Arc;
use uuid::Uuid;

/// The records whose API representation a commit changed without writing them: those
/// that show something of a record the commit wrote (`written`: kind and id of each
/// record upserted or deleted, with the state before and after the commit).
///
/// Dependents are found through the state's links ([`crate::parents::Dependents`]): a
/// company's jobs and contacts, a contact's notes, a job's rows, a user's rows (those
/// it owns, and those on jobs it recruits for), a stage's rows; a candidate row's CVs
/// through `cv_by_row`, and only when the row existed before and its stamps moved (the
/// CVs show them). The work is proportional to the records found, whatever the size of
/// the tables: this runs on the actor's thread, between commits.
pub fn derived(
    before: &WorkspaceState,
    after: &WorkspaceState,
    written: impl IntoIterator<Item = (RecordKind, Uuid)>,
) -> Vec<Change> {
    let written = Written::sort(before, after, written);
    // Dependents are looked for among the records as they are after the commit, and
    // kept only when the commit left them alone (the same record, not a copy, in both
    // states): a record written, created or deleted is in the log already. Links of
    // the state before need not be read: a record whose link moved was written.
    let mut out: Vec<Change> = Vec::new();
    let links = &after.dependents;
    for company in &written.companies {
        for at in links.jobs_by_company.of(*company) {
            if let Some((id, job)) = after.jobs.at_row(at) {
                if kept(before.jobs.get(id), job) {
                    out.push(change(Entity::Jobs, *id));
                }
            }
        }
        for at in links.contacts_by_company.of(*company) {
            if let Some((id, contact)) = after.contacts.at_row(at) {
                if kept(before.contacts.get(id), contact) {
                    out.push(change(Entity::Contacts, *id));
                }
            }
        }
    }
    for contact in &written.contacts {
        // Visible notes only: a private note shows nothing, before or after.
        for (_, id) in after.notes_by_parent.of(&(ParentType::Contact, *contact)) {
            if let Some(note) = after.notes.get(&id) {
                if kept(before.notes.get(&id), note) {
                    out.push(change(Entity::Notes, id));
                }
            }
        }
    }
    let mut rows: Vec<u32> = Vec::new();
    for job in &written.jobs {
        rows.extend(links.rows_by_job.of(*job));
    }
    for user in &written.users {
        rows.extend(links.rows_by_owner.of(*user));
        // The rows of the jobs it recruits for show it when their owner does not.
        for at in links.jobs_by_recruiter.of(*user) {
            if let Some((job, _)) = after.jobs.at_row(at) {
                rows.extend(links.rows_by_job.of(*job));
            }
        }
    }
    for stage in &written.stages {
        rows.extend(links.rows_by_stage.of(*stage));
    }
    rows.sort_unstable();
    rows.dedup();
    for at in rows {
        if let Some((id, row)) = after.candidates.at_row(at) {
            if kept(before.candidates.get(id), row) {
                out.push(change(Entity::Candidates, *id));
                if row.job_id().is_some() {
                    out.push(change(Entity::Applications, *id));
                }
            }
        }
    }
    out.extend(restamped_cvs(before, after, &written.restamped_rows));
    // What was found may have changed (a job's applications, whatever of the job
    // changed); only what the API now shows differently is a change: each is rendered
    // in both states and compared.
    out.sort_unstable();
    out.dedup();
    // Two buffers for all the renderings: a record's JSON is most of a kilobyte, and
    // grown anew for each it cost more allocations than the rendering itself.
    let (mut was, mut is) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    out.retain(|c| {
        let shown_before = rendered(before, c, &mut was);
        let shown_after = rendered(after, c, &mut is);
        shown_before != shown_after || (shown_before && was != is)
    });
    out
}

/// The writes of a commit that [`derived`] follows, by kind: those whose change may
/// show on other records.
#[derive(Default)]
struct Written {
    companies: Vec<Uuid>,
    contacts: Vec<Uuid>,
    jobs: Vec<Uuid>,
    users: Vec<Uuid>,
    stages: Vec<Uuid>,
    /// Candidate rows that existed before and whose stamps moved.
    restamped_rows: Vec<Uuid>,
}

impl Written {
    fn sort(
        before: &WorkspaceState,
        after: &WorkspaceState,
        written: impl IntoIterator<Item = (RecordKind, Uuid)>,
    ) -> Written {
        let mut w = Written::default();
        for (kind, u) in written {
            match kind {
                RecordKind::Company => w.companies.push(u),
                RecordKind::Contact => w.contacts.push(u),
                // A job, a user or a stage shows on candidate rows, which are many, only
                // through a part of it: its rows are followed only when that part moved
                // (a job's title, a user's name, a stage written again as it was change
                // none of them).
                RecordKind::Job => {
                    let recruiter =
                        |ws: &WorkspaceState| ws.jobs.get(&u).map(|j| j.assigned_recruiter_id);
                    if recruiter(before) != recruiter(after) {
                        w.jobs.push(u);
                    }
                }
                RecordKind::User if before.user_is_active(u) != after.user_is_active(u) => {
                    w.users.push(u)
                }
                RecordKind::Stage if before.stages.get(&u) != after.stages.get(&u) => {
                    w.stages.push(u)
                }
                RecordKind::Candidate => {
                    let stamps = |ws: &WorkspaceState| {
                        ws.candidates
                            .get(&u)
                            .map(|r| (r.created_at(), r.updated_at()))
                    };
                    if let Some(was) = stamps(before) {
                        if stamps(after) != Some(was) {
                            w.restamped_rows.push(u);
                        }
                    }
                }
                _ => {}
            }
        }
        for ids in [
            &mut w.companies,
            &mut w.contacts,
            &mut w.jobs,
            &mut w.users,
            &mut w.stages,
        ] {
            ids.sort_unstable();
            ids.dedup();
        }
        w
    }
}

/// The CVs of candidate rows whose stamps moved (a CV shows its row's stamps).
fn restamped_cvs<'a>(
    before: &'a WorkspaceState,
    after: &'a WorkspaceState,
    rows: &'a [Uuid],
) -> impl Iterator<Item = Change> + 'a {
    rows.iter()
        .flat_map(move |row| after.cv_by_row.of(*row))
        .filter_map(move |at| {
            let (cv, rec) = after.attachments.at_row(at)?;
            kept(before.attachments.get(cv), rec).then(|| Change {
                entity: Entity::Attachments,
                id: LoggedId::parse(cv),
            })
        })
}

/// Whether a record found after a commit is the very record held before it.
fn kept<T: ?Sized>(before: Option<&Arc<T>>, after: &Arc<T>) -> bool {
    before.is_some_and(|b| Arc::ptr_eq(b, after))
}

fn change(entity: Entity, id: Uuid) -> Change {
    Change {
        entity,
        id: LoggedId::Uuid(id),
    }
}

/// What the API shows of a record in `ws`, written into `out` (emptied first): whether it
/// is shown at all.
fn rendered(ws: &WorkspaceState, change: &Change, out: &mut Vec<u8>) -> bool {
    out.clear();
    matches!(
        entities::write_visible_logged(ws, change.entity, &change.id, out),
        Ok(true)
    )
}

/// Touches the records behind `derived` changes in `ws`: each moves its `updated_at` to
/// `stamp` ([`WorkspaceState::restamp`]): a representation that changed moves the
/// record's `updated_at` too, so that a watermark client (`updated_since`) sees it as
/// the feed does. The records so touched, by kind and id. Attachments are left out: a
/// CV's stamps are its candidate row's, which the change moved already.
pub fn touch(ws: &mut WorkspaceState, derived: &[Change], stamp: Stamp) -> Touched {
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
        if seen.insert((kind, id)) && ws.restamp(kind, id, stamp) {
            out.push((kind, id));
        }
    }
    Touched {
        stamp,
        records: out,
    }
}

/// Where [`complete`] puts the records a commit touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchedRows {
    /// Apart from the upserts (`ChangeSet::touched`): a batch of API writes, whose
    /// client waits for its commit, stores them after it (`Store::flush_touched`).
    Apart,
    /// With the upserts: an import, written in transactions of its own anyway.
    WithUpserts,
}

/// Completes a commit's change set with what it shows beyond the records it writes, and
/// brings `after` (the state the commit makes) in line: the derived changes of records it
/// does not write, touched with one new stamp and added to the upserts; then the
/// tombstones of every record it takes out of what the API shows or brings back.
/// `also_written` and `also_changed` name records the commit writes outside `upserts`
/// and `deletes` (an import's packed candidate rows). The one place both a batch of
/// writes and an import ask this, so the two agree.
pub fn complete(
    before: &WorkspaceState,
    after: &mut WorkspaceState,
    changes: &mut crate::store::ChangeSet,
    touched_rows: TouchedRows,
    also_written: impl IntoIterator<Item = (RecordKind, Uuid)>,
    also_changed: impl IntoIterator<Item = Change>,
) {
    let written = written(changes).into_iter().chain(also_written);
    changes.derived = derived(before, after, written);
    if !changes.derived.is_empty() {
        let stamp = after.next_stamp();
        let touched = touch(after, &changes.derived, stamp);
        match touched_rows {
            TouchedRows::WithUpserts => changes.upserts.extend(touched.rows_in(after)),
            TouchedRows::Apart if touched.records.is_empty() => {}
            TouchedRows::Apart => changes.touched = Some(touched),
        }
    }
    // The touched records are among the derived changes.
    let changed = crate::entries::direct(
        &changes.upserts,
        changes.deletes.iter().map(|(k, id)| (*k, id.as_str())),
    )
    .chain(also_changed)
    .chain(changes.derived.iter().cloned());
    let left_at = after.stamp_after_last();
    let tombstones = tombstone_changes(before, after, changed, left_at);
    if !tombstones.is_empty() {
        // The clock never issues a stamp at or behind a tombstone's.
        after.next_stamp();
        after.tombstones.apply(&tombstones);
    }
    changes.tombstones = tombstones;
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

/// The tombstones a commit sets and clears: of `changed` (every record it changed,
/// directly or not; repeats are harmless), those shown in `before` and not in `after`
/// left at `now`; those tombstoned in `before` and shown in `after` are back.
pub fn tombstone_changes(
    before: &WorkspaceState,
    after: &WorkspaceState,
    changed: impl IntoIterator<Item = Change>,
    now: Stamp,
) -> Vec<TombstoneChange> {
    let mut out = Vec::new();
    for change in changed {
        // One lookup for most: a record not shown before and not tombstoned (every
        // record of a first import) can neither leave nor come back.
        if entities::shown_logged(before, change.entity, &change.id) {
            if !entities::shown_logged(after, change.entity, &change.id) {
                out.push((change, Some(now)));
            }
        } else if before.tombstones.contains(&change)
            && entities::shown_logged(after, change.entity, &change.id)
        {
            out.push((change, None));
        }
    }
    out
}

#[cfg(test)]
#[path = "derive_tests.rs"]
mod tests;
