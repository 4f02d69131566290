//! The plan of an import: the file validated ([`super::validate`]), then turned into the
//! change set for the store (in dependency order), the blobs to write, the service's own
//! consequences (tasks reminding of a placement the import undoes are cancelled), the
//! record count after it and, when asked, the next state.

use super::parse::pack_candidate;
use super::validate::Checker;
use super::{Counts, Entry, ImportPlan, PackedUpserts, Snapshot, SnapshotError};
use crate::keys::KeyDirectory;
use crate::model::*;
use crate::phone::NumberMemo;
use crate::state::bulk::SearchBuild;
use crate::state::WorkspaceState;
use crate::store::ChangeSet;
use crate::time::Stamp;
use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;
use uuid::Uuid;

/// From this many changed records, when they are also a quarter or more of what the
/// workspace holds, an import rebuilds the search indexes whole instead of updating them.
const BULK_IMPORT_RECORDS: usize = 10_000;

/// Validates `snap` against `current` (the target workspace as it stands, `None` if new)
/// and computes everything the import will change: the change set, the blobs and, when
/// `build_next`, the workspace state after the commit.
pub fn plan_import(
    current: Option<&WorkspaceState>,
    mut snap: Snapshot,
    keys: &dyn KeyDirectory,
    build_next: impl Into<BuildNext>,
) -> Result<ImportPlan, SnapshotError> {
    let build_next = build_next.into();
    let began = std::time::Instant::now();
    let workspace = snap
        .workspace
        .clone()
        .ok_or_else(|| SnapshotError::top("workspace", "missing"))?;
    if let Some(cur) = current {
        if cur.id() != workspace.id {
            return Err(SnapshotError::top(
                "workspace.id",
                "does not match the target workspace",
            ));
        }
    }
    if let Some(r) = &workspace.default_region {
        if crate::phone::parse_region(r).is_none() {
            return Err(SnapshotError::top(
                "workspace.default_region",
                format!("{r:?} is not an ISO 3166 alpha-2 region code"),
            ));
        }
    }
    let empty;
    let state: &WorkspaceState = match current {
        Some(s) => s,
        None => {
            empty = WorkspaceState::new(workspace.clone());
            &empty
        }
    };
    let completed = Checker::new(state, keys, &snap)?.check(&snap)?;
    let validated = began.elapsed();
    // Candidate rows parsed before the workspace (or none) are normalised now, with the
    // region the workspace will have.
    let region = workspace
        .default_region
        .as_deref()
        .and_then(crate::phone::parse_region);
    if snap.numbers_region != Some(region) {
        snap.candidates
            .par_iter_mut()
            .for_each_init(NumberMemo::default, |memo, e| {
                if let Entry::Upsert(c) = e {
                    *c = pack_candidate(&c.raw(), Some(region), memo);
                }
            });
    }

    // The change set, upserts in dependency order; notes as completed
    // by validation (one completed record per upsert entry, in file order).
    let mut changes = ChangeSet {
        workspace: Some(workspace.clone()),
        ..ChangeSet::default()
    };
    let mut upserted = Counts::new();
    let mut deleted = Counts::new();
    let mut out = (&mut changes, &mut upserted, &mut deleted);
    take(
        "users",
        RecordKind::User,
        snap.users,
        Record::User,
        &mut out,
    );
    take(
        "pipeline_stages",
        RecordKind::Stage,
        snap.pipeline_stages,
        Record::Stage,
        &mut out,
    );
    take(
        "companies",
        RecordKind::Company,
        snap.companies,
        Record::Company,
        &mut out,
    );
    take(
        "contacts",
        RecordKind::Contact,
        snap.contacts,
        Record::Contact,
        &mut out,
    );
    take("jobs", RecordKind::Job, snap.jobs, Record::Job, &mut out);
    let mut packed = PackedUpserts::default();
    take_packed(
        "candidates",
        RecordKind::Candidate,
        snap.candidates,
        &mut packed.candidates,
        &mut out,
    );
    take(
        "tasks",
        RecordKind::Task,
        snap.tasks,
        Record::Task,
        &mut out,
    );
    let mut notes = completed.notes.into_iter();
    take_packed(
        "notes",
        RecordKind::Note,
        snap.notes.into_iter().map(|e| match e {
            Entry::Upsert(_) => Entry::Upsert(notes.next().expect("one per upsert")),
            Entry::Delete(id) => Entry::Delete(id),
        }),
        &mut packed.notes,
        &mut out,
    );
    let mut blobs = Vec::new();
    take_packed(
        "attachments",
        RecordKind::Attachment,
        snap.attachments.into_iter().map(|e| match e {
            Entry::Upsert(a) => {
                if let Some(bytes) = a.content {
                    blobs.push((a.rec.id().to_string(), bytes));
                }
                Entry::Upsert(a.rec)
            }
            Entry::Delete(id) => Entry::Delete(id),
        }),
        &mut packed.attachments,
        &mut out,
    );
    // The store's key order, so that its writes go through its index in order.
    packed
        .candidates
        .par_sort_unstable_by(|a, b| a.key().cmp(b.key()));
    packed
        .notes
        .par_sort_unstable_by(|a, b| a.key().cmp(b.key()));
    packed
        .attachments
        .par_sort_unstable_by(|a, b| a.key().cmp(b.key()));
    let k_del = snap
        .api_keys
        .iter()
        .filter(|e| matches!(e, Entry::Delete(_)))
        .count();
    upserted.insert("api_keys", snap.api_keys.len() - k_del);
    deleted.insert("api_keys", k_del);
    changes.keys = completed.keys;
    cancel_undone_placements_reminders(state, &packed, &mut changes);

    // Ids appear once per array, so what is new and what is removed add up exactly.
    let records_after = state.stored_records()
        + changes
            .upserts
            .iter()
            .filter(|r| !state.holds_record(r))
            .count()
        + packed
            .candidates
            .iter()
            .filter(|c| !state.candidates.contains(&c.id()))
            .count()
        + packed
            .notes
            .iter()
            .filter(|n| !state.notes.contains(&n.id()))
            .count()
        + packed
            .attachments
            .iter()
            .filter(|a| !state.attachments.contains(a.id()))
            .count()
        - changes
            .deletes
            .iter()
            .filter(|(k, id)| state.holds(*k, id))
            .count();

    // The next state, unless the caller only needs the change set (some tests). Into a
    // workspace that holds nothing, nothing the import writes derives changes or
    // tombstones from what was there, so the state can wait for the commit to build.
    let holds_nothing =
        state.position == 0 && state.stored_records() == 0 && state.tombstones.is_empty();
    let (next, next_base) = match build_next {
        BuildNext::No => (None, None),
        BuildNext::WhileCommitting if holds_nothing => (None, Some(state.clone())),
        BuildNext::Now | BuildNext::WhileCommitting => {
            let next = next_state(
                SearchBuild::Together,
                state.clone(),
                &workspace,
                changes.upserts.iter().cloned(),
                &packed,
                &changes.deletes,
            );
            (Some(next), None)
        }
    };

    // What the API shows of records the import does not write, but which show something
    // of records it does (a company's name on its jobs, a user on candidate rows, …).
    // And the records it takes out of what the API shows, or brings back (tombstones).
    let mut next = next;
    if let (Some(before), Some(after)) = (current, next.as_mut()) {
        crate::changes::derive::complete(
            before,
            after,
            &mut changes,
            crate::changes::derive::TouchedRows::WithUpserts,
            packed
                .candidates
                .iter()
                .map(|c| (RecordKind::Candidate, c.id())),
            packed.changes(),
        );
    }

    // A workspace's first commit logs nothing: no reader can be behind it, and a large
    // first import would otherwise write every record a second time.
    changes.unlogged = current.is_none_or(|c| c.position == 0);
    // The store holds a workspace's records only after a commit, which moves its
    // position; and the state was loaded from the store (a store written before
    // positions were kept reads 0 with records, hence the count).
    changes.fresh = current.is_none_or(|c| c.position == 0 && c.stored_records() == 0);

    tracing::debug!(
        validate_ms = validated.as_millis() as u64,
        plan_ms = began.elapsed().as_millis() as u64,
        next_built = next.is_some(),
        "import planned"
    );
    Ok(ImportPlan {
        workspace,
        changes,
        packed,
        blobs,
        next,
        next_base,
        upserted,
        deleted,
        records_after,
    })
}

/// `base` (the workspace as it stands) with an import's records written into it: the
/// small kinds' `upserts` (taken one by one, so that a caller who owns them never holds
/// them twice), the `packed` ones, then the `deletes`. A bulk import builds the
/// sync orders and search indexes once, not row by row.
pub(super) fn next_state(
    search: SearchBuild,
    mut next: WorkspaceState,
    workspace: &Workspace,
    upserts: impl ExactSizeIterator<Item = Record>,
    packed: &PackedUpserts,
    deletes: &[(RecordKind, String)],
) -> WorkspaceState {
    let changed = upserts.len() + packed.len() + deletes.len();
    let held = next.candidates.len() + next.contacts.len() + next.companies.len();
    let bulk = changed >= BULK_IMPORT_RECORDS && changed * 4 >= held;
    if bulk {
        next.begin_bulk();
    }
    next.set_workspace(workspace.clone());
    for r in upserts {
        next.put(r);
    }
    for c in &packed.candidates {
        next.put_candidate_rec(c.clone());
    }
    for n in &packed.notes {
        next.put_note(n.clone());
    }
    for a in &packed.attachments {
        next.put_attachment_rec(a.clone());
    }
    for (k, id) in deletes {
        next.delete(*k, id);
    }
    if bulk {
        next.end_bulk_with(search);
    }
    next
}

/// Whether, and when, an import's plan builds the workspace state after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildNext {
    /// Not at all: the caller needs only the change set.
    No,
    /// With the plan.
    Now,
    /// While the change set is committed (`ImportPlan::apply`), where nothing the import
    /// derives depends on it: into a workspace that holds nothing. With the plan
    /// otherwise.
    WhileCommitting,
}

impl From<bool> for BuildNext {
    fn from(now: bool) -> Self {
        if now {
            BuildNext::Now
        } else {
            BuildNext::No
        }
    }
}

/// Moves one array's packed entries into `into` (upserts) and the change set
/// (deletions), counting them.
fn take_packed<T: ?Sized>(
    array: &'static str,
    kind: RecordKind,
    entries: impl IntoIterator<Item = Entry<Arc<T>>>,
    into: &mut Vec<Arc<T>>,
    out: &mut (&mut ChangeSet, &mut Counts, &mut Counts),
) {
    take_entries(array, kind, entries, |_, r| into.push(r), out)
}

/// Moves one array's entries into the change set, counting them.
fn take<T>(
    array: &'static str,
    kind: RecordKind,
    entries: Vec<Entry<T>>,
    mut upsert: impl FnMut(T) -> Record,
    out: &mut (&mut ChangeSet, &mut Counts, &mut Counts),
) {
    take_entries(array, kind, entries, |c, r| c.upserts.push(upsert(r)), out)
}

/// Hands one array's upserts to `put` and puts its deletions in the change set,
/// counting both.
fn take_entries<T>(
    array: &'static str,
    kind: RecordKind,
    entries: impl IntoIterator<Item = Entry<T>>,
    mut put: impl FnMut(&mut ChangeSet, T),
    (changes, upserted, deleted): &mut (&mut ChangeSet, &mut Counts, &mut Counts),
) {
    let (mut up, mut del) = (0, 0);
    for e in entries {
        match e {
            Entry::Upsert(r) => {
                put(changes, r);
                up += 1;
            }
            Entry::Delete(id) => {
                changes.deletes.push((kind, id));
                del += 1;
            }
        }
    }
    upserted.insert(array, up);
    deleted.insert(array, del);
}

/// The service's own consequence of an import: open tasks reminding of a placement
/// that the import undoes are cancelled, stamped after everything else in the workspace.
fn cancel_undone_placements_reminders(
    state: &WorkspaceState,
    packed: &PackedUpserts,
    changes: &mut ChangeSet,
) {
    let mut unplaced: HashSet<Uuid> = HashSet::new();
    for c in &packed.candidates {
        let was_placed = state
            .candidates
            .get(&c.id())
            .is_some_and(|old| old.outcome() == Some(Outcome::Placed));
        if was_placed && c.outcome() != Some(Outcome::Placed) {
            unplaced.insert(c.id());
        }
    }
    if unplaced.is_empty() {
        return;
    }
    let reminds = |t: &Task| {
        t.status == TaskStatus::Open && t.placement_row_id.is_some_and(|p| unplaced.contains(&p))
    };
    let in_file: HashSet<Uuid> = changes
        .upserts
        .iter()
        .filter_map(|r| match r {
            Record::Task(t) => Some(t.id),
            _ => None,
        })
        .collect();
    let deleted_tasks: HashSet<&str> = changes
        .deletes
        .iter()
        .filter(|(k, _)| *k == RecordKind::Task)
        .map(|(_, id)| id.as_str())
        .collect();
    let mut cancel: Vec<Task> = changes
        .upserts
        .iter()
        .filter_map(|r| match r {
            Record::Task(t) if reminds(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    cancel.extend(
        state
            .tasks
            .iter()
            .filter(|(id, t)| {
                !in_file.contains(id)
                    && !deleted_tasks.contains(id.to_string().as_str())
                    && reminds(t)
            })
            .map(|(_, t)| (**t).clone()),
    );
    let cancelled_ids: HashSet<Uuid> = cancel.iter().map(|t| t.id).collect();
    changes
        .upserts
        .retain(|r| !matches!(r, Record::Task(t) if cancelled_ids.contains(&t.id)));
    let mut clock = changes
        .upserts
        .iter()
        .filter_map(Record::updated_at)
        .chain(packed.candidates.iter().map(|c| c.updated_at()))
        .chain(packed.notes.iter().map(|n| n.updated_at()))
        .chain(packed.attachments.iter().map(|a| a.updated_at()))
        .fold(state.last_stamp, Stamp::max);
    for mut t in cancel {
        clock = Stamp::now().max(clock.next());
        t.status = TaskStatus::Cancelled;
        t.completed_at = None;
        t.updated_at = clock;
        changes.upserts.push(Record::Task(t));
    }
}
