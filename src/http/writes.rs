//! Write endpoints: `POST /v1/notes`, `POST /v1/tasks`, `PATCH` and `DELETE` of notes and
//! tasks, and `PATCH /v1/{entity}/{id}` of candidates, contacts, companies and jobs.
//!
//! Each entity's writes have handlers of their own, routed by the `{entity}` of the path
//! (`http::resource`), so each names the scope it needs in its signature
//! (`Authed<NotesWrite>`). In order: the method is served for the entity (405 with
//! `Allow`, before any handler), the key and its scope (401/403), the id's form (404), the
//! body (400, field by field).
//! Then the write goes to the workspace actor, which checks it against the workspace,
//! commits it (grouped with other writes queued meanwhile) and publishes the new state
//! before answering. The response renders the written record from that state.
//!
//! Response bodies (where the spec leaves them open): a created note answers
//! `{data: {id}}` (201; 200 when a repeated `reference` updated the earlier note); the
//! other writes answer the record as `GET` shows it (201 for a new task), except that a
//! private note or task — never shown anywhere — answers only `{id}`; deletes answer
//! `{data: {deleted: true}}`.

use super::auth::{Authed, NotesWrite, RecordsWrite, RequiredScope, TasksWrite};
use super::body::{read_object, Fields};
use super::envelope::Envelope;
use super::errors::ApiError;
use super::records::{parse_record_id, EntityParam};
use super::request::RequestId;
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use actors::actor::{Write, WriteDone};
use actors::entities;
use actors::model::{candidate, company, contact, job, note, task, Entity, ParentType};
use actors::writes::*;
use serde_json::json;
use uuid::Uuid;

/// Sends a write to its workspace's actor and waits for the commit.
async fn submit<S: RequiredScope>(
    op: impl FnOnce() -> Result<WriteOp, ApiError>,
    caller: Authed<S>,
) -> Result<WriteDone, ApiError> {
    let op = op()?;
    Ok(caller.workspace.addr.send(Write(op)).await??)
}

fn parent_type(f: &mut Fields, allowed: &[ParentType]) -> Result<ParentType, ApiError> {
    let raw = f.required_string("parent_type")?;
    allowed
        .iter()
        .copied()
        .find(|p| p.as_str() == raw)
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|p| p.as_str()).collect();
            ApiError::bad_request(format!(
                "parent_type: {raw:?} is not one of {}",
                names.join(", ")
            ))
        })
}

fn with_status(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/json")
        .body(body)
}

/// `{data: {id}}`.
fn id_only(id: Uuid, rid: &RequestId) -> Result<Vec<u8>, ApiError> {
    Envelope::of(&json!({ "id": id }))?.close(rid.as_str())
}

/// The answer to a write, rendered from the state its commit published.
fn render_written(done: &WriteDone, rid: &RequestId) -> Result<Vec<u8>, ApiError> {
    match done.written {
        Written::Created(kind, id) | Written::Updated(kind, id) => {
            // As `GET` shows it; a private note or task, never shown, answers its id.
            let mut answer = Envelope::new(512);
            let shown = match kind.entity() {
                Some(e) => entities::write_visible_uuid(&done.state, e, id, answer.data_buf())
                    .map_err(ApiError::internal)?,
                None => false,
            };
            if shown {
                answer.close(rid.as_str())
            } else {
                id_only(id, rid)
            }
        }
        Written::Deleted(..) => Envelope::of(&json!({ "deleted": true }))?.close(rid.as_str()),
    }
}

/// `POST /v1/notes`.
pub async fn create_note(
    caller: Authed<NotesWrite>,
    req: HttpRequest,
    payload: web::Payload,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let mut f = read_object(&req, payload, note::NEW_FIELDS).await?;
    let key = caller.key.id.clone();
    let done = submit(|| note_from(&mut f, &key), caller).await?;
    let (status, id) = match done.written {
        Written::Created(_, id) => (StatusCode::CREATED, id),
        Written::Updated(_, id) | Written::Deleted(_, id) => (StatusCode::OK, id),
    };
    Ok(with_status(status, id_only(id, &rid)?))
}

/// `POST /v1/tasks`.
pub async fn create_task(
    caller: Authed<TasksWrite>,
    req: HttpRequest,
    payload: web::Payload,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let mut f = read_object(&req, payload, task::NEW_FIELDS).await?;
    let key = caller.key.id.clone();
    let done = submit(|| task_from(&mut f, &key), caller).await?;
    let status = match done.written {
        Written::Created(..) => StatusCode::CREATED,
        _ => StatusCode::OK,
    };
    Ok(with_status(status, render_written(&done, &rid)?))
}

/// A note to create; its `reference`, if any, is `key`'s own (references are scoped per
/// key: another key's same reference names another note).
fn note_from(f: &mut Fields, key: &str) -> Result<WriteOp, ApiError> {
    let parent_type = parent_type(
        f,
        &[
            ParentType::Candidate,
            ParentType::Contact,
            ParentType::Company,
            ParentType::Job,
        ],
    )?;
    Ok(WriteOp::CreateNote(NewNote {
        parent_type,
        parent_id: f.required_uuid("parent_id")?,
        body_html: f.required_string("body_html")?,
        title: f.text("title")?.and_then(change_value),
        label: f.string("type")?.and_then(change_value),
        author_email: f.string_value_only("author_email")?,
        is_private: f.boolean("is_private")?.unwrap_or(false),
        reference: f.reference("reference")?,
        reference_key: Some(key.to_string()),
    }))
}

/// A task to create; its `reference` is `key`'s own, as a note's.
fn task_from(f: &mut Fields, key: &str) -> Result<WriteOp, ApiError> {
    let parent_type = parent_type(
        f,
        &[
            ParentType::Candidate,
            ParentType::Contact,
            ParentType::Company,
        ],
    )?;
    Ok(WriteOp::CreateTask(NewTask {
        parent_type,
        parent_id: f.required_uuid("parent_id")?,
        title: f.required_string("title")?,
        body_html: f.text("body_html")?.and_then(change_value),
        due_date: f.date("due_date")?.and_then(change_value),
        owner_email: f.string_value_only("owner_email")?,
        is_private: f.boolean("is_private")?.unwrap_or(false),
        reference: f.reference("reference")?,
        reference_key: Some(key.to_string()),
    }))
}

/// On a create, `null` means the same as leaving the field out.
fn change_value<T>(c: Change<T>) -> Option<T> {
    match c {
        Change::Set(v) => Some(v),
        Change::Clear => None,
    }
}

/// The id of an item path; an id in an unexpected format is "no such record".
fn item_id(entity: Entity, raw: &str) -> Result<Uuid, ApiError> {
    parse_record_id(raw)
        .ok_or_else(|| ApiError::not_found(format!("no {} record with id {raw:?}", entity.name())))
}

/// The answer to a write by id: the record as `GET` shows it.
fn answered(done: &WriteDone, rid: &RequestId) -> Result<HttpResponse, ApiError> {
    Ok(super::envelope::json_ok(render_written(done, rid)?))
}

/// `PATCH /v1/notes/{id}`.
pub async fn patch_note(
    caller: Authed<NotesWrite>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let id = item_id(Entity::Notes, &path.1)?;
    let mut f = read_object(&req, payload, note::PATCH_FIELDS).await?;
    let op = || {
        Ok(WriteOp::UpdateNote(
            id,
            NotePatch {
                body_html: f.string_value_only("body_html")?,
                title: f.text("title")?,
                label: f.string("type")?,
                is_private: f.boolean("is_private")?,
            },
        ))
    };
    answered(&submit(op, caller).await?, &rid)
}

/// `PATCH /v1/tasks/{id}`.
pub async fn patch_task(
    caller: Authed<TasksWrite>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let id = item_id(Entity::Tasks, &path.1)?;
    let mut f = read_object(&req, payload, task::PATCH_FIELDS).await?;
    answered(&submit(|| task_patch(id, &mut f), caller).await?, &rid)
}

/// `PATCH /v1/{entity}/{id}` of candidates, contacts, companies and jobs.
pub async fn patch_record(
    caller: Authed<RecordsWrite>,
    EntityParam(entity): EntityParam,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let id = item_id(entity, &path.1)?;
    let allowed = match entity {
        Entity::Candidates => candidate::PATCH_FIELDS,
        Entity::Contacts => contact::PATCH_FIELDS,
        Entity::Companies => company::PATCH_FIELDS,
        _ => job::PATCH_FIELDS,
    };
    let mut f = read_object(&req, payload, allowed).await?;
    answered(
        &submit(|| record_patch(entity, id, &mut f), caller).await?,
        &rid,
    )
}

/// `DELETE /v1/notes/{id}`.
pub async fn delete_note(
    caller: Authed<NotesWrite>,
    path: web::Path<(String, String)>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let id = item_id(Entity::Notes, &path.1)?;
    answered(&submit(|| Ok(WriteOp::DeleteNote(id)), caller).await?, &rid)
}

/// `DELETE /v1/tasks/{id}`.
pub async fn delete_task(
    caller: Authed<TasksWrite>,
    path: web::Path<(String, String)>,
    rid: RequestId,
) -> Result<HttpResponse, ApiError> {
    let id = item_id(Entity::Tasks, &path.1)?;
    answered(&submit(|| Ok(WriteOp::DeleteTask(id)), caller).await?, &rid)
}

fn task_patch(id: Uuid, f: &mut Fields) -> Result<WriteOp, ApiError> {
    let status = match f.string_value_only("status")?.as_deref() {
        None => None,
        Some("open") => Some(ClientTaskStatus::Open),
        Some("completed") => Some(ClientTaskStatus::Completed),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status: {other:?} cannot be set; send open or completed"
            )))
        }
    };
    Ok(WriteOp::UpdateTask(
        id,
        TaskPatch {
            title: f.string_value_only("title")?,
            body_html: f.text("body_html")?,
            due_date: f.date("due_date")?,
            owner_email: f.string("owner_email")?,
            is_private: f.boolean("is_private")?,
            status,
        },
    ))
}

fn record_patch(entity: Entity, id: Uuid, f: &mut Fields) -> Result<WriteOp, ApiError> {
    Ok(match entity {
        Entity::Candidates => WriteOp::PatchCandidate(
            id,
            CandidatePatch {
                name: f.string("name")?,
                email: f.email("email")?,
                phone: f.phone("phone")?,
                job_title: f.string("job_title")?,
                current_company: f.string("current_company")?,
                current_salary_amount: f.amount("current_salary_amount")?,
                current_salary_currency: f.currency("current_salary_currency")?,
                expected_salary_amount: f.amount("expected_salary_amount")?,
                expected_salary_currency: f.currency("expected_salary_currency")?,
                owning_recruiter_id: f.uuid("owning_recruiter_id")?,
            },
        ),
        Entity::Contacts => {
            WriteOp::PatchContact(
                id,
                ContactPatch {
                    name: f.string("name")?,
                    email: f.email("email")?,
                    phone: f.phone("phone")?,
                    company_id: match f.uuid("company_id")? {
                        None => None,
                        Some(Change::Set(c)) => Some(c),
                        Some(Change::Clear) => return Err(ApiError::bad_request(
                            "company_id: a contact always belongs to a company; it cannot be null",
                        )),
                    },
                    owning_recruiter_id: f.uuid("owning_recruiter_id")?,
                },
            )
        }
        Entity::Companies => WriteOp::PatchCompany(
            id,
            CompanyPatch {
                name: f.string("name")?,
                phone: f.phone("phone")?,
                owning_recruiter_id: f.uuid("owning_recruiter_id")?,
            },
        ),
        _ => WriteOp::PatchJob(
            id,
            JobPatch {
                title: f.string("title")?,
                salary_amount: f.amount("salary_amount")?,
                salary_currency: f.currency("salary_currency")?,
                company_id: f.uuid("company_id")?,
                live: f.boolean("live")?,
                owning_recruiter_id: f.uuid("owning_recruiter_id")?,
            },
        ),
    })
}
