//! Tasks: created on a candidate, contact or company, updated (status and
//! `completed_at` kept in step) and deleted by id (only ones the API shows),
//! idempotent on `reference`.

use super::*;

/// The task a PATCH or DELETE by id may reach: as [`shown_note`].
pub(super) fn shown_task(state: &WorkspaceState, id: Uuid) -> Result<&Arc<Task>, WriteError> {
    state
        .tasks
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no task with id {id}")))
}

/// The assignee named by `owner_email`: an accepted member, or a 400 naming the field.
pub(super) fn task_owner(state: &WorkspaceState, email: &str) -> Result<Uuid, WriteError> {
    member_by_email(state, email).ok_or_else(|| {
        invalid(
            "owner_email",
            format!("{email:?} is not the work e-mail of an accepted member of this workspace"),
        )
    })
}

pub(super) fn create_task(
    state: &WorkspaceState,
    t: NewTask,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    // The body parser already refuses it; the domain holds the rule too.
    if t.parent_type == ParentType::Job {
        return Err(invalid(
            "parent_type",
            "tasks belong to a candidate, contact or company, never a job",
        ));
    }
    let (parent_id, _, _) = resolve_parent(state, t.parent_type, t.parent_id)?;
    let owner_id = match t.owner_email.as_deref() {
        Some(e) => Some(task_owner(state, e)?),
        None => workspace_owner(state),
    };
    let existing = t
        .reference
        .as_deref()
        .and_then(|r| state.task_by_reference(t.reference_key.as_deref(), r))
        .and_then(|id| state.tasks.get(&id).cloned());
    let (id, created_at, written, status, completed_at, placement) = match &existing {
        Some(old) => (
            old.id,
            old.created_at,
            Written::Updated(RecordKind::Task, old.id),
            old.status,
            old.completed_at,
            old.placement_row_id,
        ),
        None => {
            let id = Uuid::new_v4();
            (
                id,
                stamp,
                Written::Created(RecordKind::Task, id),
                TaskStatus::Open,
                None,
                None,
            )
        }
    };
    out.push(Record::Task(Task {
        id,
        parent_type: t.parent_type,
        parent_id,
        title: Some(t.title),
        body_html: t.body_html,
        status,
        due_date: t.due_date,
        owner_id,
        completed_at,
        is_private: t.is_private,
        placement_row_id: placement,
        reference_key: t.reference.as_ref().and(t.reference_key),
        reference: t.reference,
        created_at,
        updated_at: stamp,
    }));
    Ok(written)
}

pub(super) fn update_task(
    state: &WorkspaceState,
    id: Uuid,
    p: TaskPatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut task = (**shown_task(state, id)?).clone();
    if let Some(t) = p.title {
        task.title = Some(t);
    }
    apply(&mut task.body_html, p.body_html);
    apply(&mut task.due_date, p.due_date);
    match p.owner_email {
        Some(Change::Set(e)) => task.owner_id = Some(task_owner(state, &e)?),
        Some(Change::Clear) => task.owner_id = None,
        None => {}
    }
    if let Some(v) = p.is_private {
        task.is_private = v;
    }
    match p.status {
        Some(ClientTaskStatus::Open) => {
            task.status = TaskStatus::Open;
            task.completed_at = None;
        }
        Some(ClientTaskStatus::Completed) => {
            if task.status != TaskStatus::Completed || task.completed_at.is_none() {
                task.completed_at = Some(stamp);
            }
            task.status = TaskStatus::Completed;
        }
        None => {}
    }
    task.updated_at = stamp;
    out.push(Record::Task(task));
    Ok(Written::Updated(RecordKind::Task, id))
}
