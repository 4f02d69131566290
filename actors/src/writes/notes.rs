//! Notes: created on a parent (a candidate resolves to the person's primary row),
//! updated and deleted by id (only ones the API shows), idempotent on `reference`.

use super::*;

/// The note a PATCH or DELETE by id may reach: only one the API shows. A private note is
/// never returned by id, so it cannot be changed, published or deleted by id either; it
/// is refused with the very error of a missing id, so the answer does not tell one from
/// the other. (A create repeating a `reference` does not go through here: it keeps
/// updating the note it names, private or not; references are scoped per key, so only
/// the key that made that note reaches it that way.)
pub(super) fn shown_note(state: &WorkspaceState, id: Uuid) -> Result<&Arc<NoteRec>, WriteError> {
    state
        .notes
        .get_visible(&id)
        .ok_or_else(|| WriteError::NotFound(format!("no note with id {id}")))
}

pub(super) fn create_note(
    state: &WorkspaceState,
    n: NewNote,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let (parent_id, job_id, company_id) = resolve_parent(state, n.parent_type, n.parent_id)?;
    let author_id = n
        .author_email
        .as_deref()
        .and_then(|e| member_by_email(state, e))
        .or_else(|| workspace_owner(state));
    let existing = n
        .reference
        .as_deref()
        .and_then(|r| state.note_by_reference(n.reference_key.as_deref(), r))
        .and_then(|id| state.notes.get(&id).cloned());
    let (id, created_at, written) = match &existing {
        Some(old) => (
            old.id(),
            old.created_at(),
            Written::Updated(RecordKind::Note, old.id()),
        ),
        None => {
            let id = Uuid::new_v4();
            (id, stamp, Written::Created(RecordKind::Note, id))
        }
    };
    out.push(Record::Note(Note {
        id,
        parent_type: n.parent_type,
        parent_id,
        title: n.title,
        body_html: Some(n.body_html),
        label: n.label,
        is_private: n.is_private,
        author_id,
        job_id: (n.parent_type == ParentType::Candidate)
            .then_some(job_id)
            .flatten(),
        company_id,
        reference_key: n.reference.as_ref().and(n.reference_key),
        reference: n.reference,
        created_at,
        updated_at: stamp,
    }));
    Ok(written)
}

pub(super) fn update_note(
    state: &WorkspaceState,
    id: Uuid,
    p: NotePatch,
    stamp: Stamp,
    out: &mut Vec<Record>,
) -> Result<Written, WriteError> {
    let mut note = shown_note(state, id)?.raw();
    if let Some(b) = p.body_html {
        note.body_html = Some(b);
    }
    apply(&mut note.title, p.title);
    apply(&mut note.label, p.label);
    if let Some(v) = p.is_private {
        note.is_private = v;
    }
    note.updated_at = stamp;
    out.push(Record::Note(note));
    Ok(Written::Updated(RecordKind::Note, id))
}
