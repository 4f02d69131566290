use super::*;
use crate::store::StoreResult;
use crate::store::{object_key, StoreError};
use serde_json::{json, Value};
use std::sync::Arc;

fn example() -> Value {
    serde_json::from_str(include_str!("../../../tests/fixtures/snapshot-small.json")).unwrap()
}

fn plan(v: &Value) -> Result<ImportPlan, SnapshotError> {
    let snap = parse_slice(&serde_json::to_vec(v).unwrap())?;
    plan_import(None, snap, &NoKeys, true)
}

fn err(v: &Value) -> SnapshotError {
    match plan(v) {
        Ok(_) => panic!("expected the snapshot to be rejected"),
        Err(e) => e,
    }
}

#[test]
fn example_imports_whole() {
    let p = plan(&example()).unwrap();
    assert_eq!(p.upserted["candidates"], 2);
    assert_eq!(p.upserted["users"], 3);
    assert_eq!(p.upserted["api_keys"], 2);
    assert_eq!(p.changes.keys.len(), 2);
    assert_eq!(p.next.as_ref().unwrap().candidates.visible_len(), 2);
    assert_eq!(p.next.as_ref().unwrap().applications().visible_len(), 1);
    // The private contact note is stored but not visible.
    assert_eq!(p.next.as_ref().unwrap().notes.len(), 2);
    assert_eq!(p.next.as_ref().unwrap().notes.visible_len(), 1);
    // Only the cv attachment carried bytes; its size is their length.
    assert_eq!(p.blobs.len(), 1);
    let cv = p
        .next
        .as_ref()
        .unwrap()
        .attachments
        .get(&Arc::from("cv:91b2d50e-a6b0-5581-b491-530642265a44"))
        .unwrap();
    assert!(cv.has_content());
    assert_eq!(cv.size(), Some(p.blobs[0].1.len() as u64));
}

#[test]
fn contact_note_company_is_filled_from_the_contact() {
    let p = plan(&example()).unwrap();
    let note = p
        .next
        .as_ref()
        .unwrap()
        .notes
        .get(&Uuid::parse_str("05ace384-620b-5866-bfb7-3cdd82c2fe5e").unwrap())
        .unwrap();
    assert_eq!(
        note.company_id(),
        Some(Uuid::parse_str("71ff7925-38fa-57bd-b38e-c2e5e183f050").unwrap())
    );
}

#[test]
fn unknown_field_is_named() {
    let mut v = example();
    v["candidates"][1]["favourite_colour"] = json!("blue");
    let e = err(&v);
    assert_eq!(e.array.as_deref(), Some("candidates"));
    assert_eq!(e.index, Some(1));
    assert_eq!(e.field.as_deref(), Some("favourite_colour"));
    assert_eq!(e.location(), "candidates[1].favourite_colour");
}

#[test]
fn wrong_type_is_named_with_its_path() {
    let mut v = example();
    v["candidates"][0]["salary"]["current_amount"] = json!("lots");
    let e = err(&v);
    assert_eq!(e.location(), "candidates[0].salary.current_amount");
    let mut v = example();
    v["companies"][0]["is_archived"] = json!("no");
    assert_eq!(err(&v).location(), "companies[0].is_archived");
}

#[test]
fn missing_required_field_is_named() {
    let mut v = example();
    v["contacts"][0]
        .as_object_mut()
        .unwrap()
        .remove("company_id");
    assert_eq!(err(&v).location(), "contacts[0].company_id");
}

#[test]
fn dangling_reference_is_named() {
    let mut v = example();
    v["contacts"][0]["company_id"] = json!("00000000-0000-4000-8000-000000000001");
    assert_eq!(err(&v).location(), "contacts[0].company_id");
    let mut v = example();
    v["notes"][0]["author_id"] = json!("00000000-0000-4000-8000-000000000001");
    assert_eq!(err(&v).location(), "notes[0].author_id");
    let mut v = example();
    v["candidates"][1]["job_id"] = json!("00000000-0000-4000-8000-000000000001");
    assert_eq!(err(&v).location(), "candidates[1].job_id");
}

#[test]
fn reference_to_a_record_deleted_in_the_same_file_dangles() {
    let mut v = example();
    v["jobs"] = json!([{"id": "2fae0fc8-6eee-55da-8a7e-f15794b7515f", "deleted": true}]);
    assert_eq!(err(&v).location(), "candidates[1].job_id");
}

#[test]
fn duplicate_id_is_named() {
    let mut v = example();
    let dup = v["users"][1].clone();
    v["users"].as_array_mut().unwrap().push(dup);
    assert_eq!(err(&v).location(), "users[3].id");
}

#[test]
fn duplicate_user_email_is_rejected_case_insensitively() {
    let mut v = example();
    v["users"][2]["email"] = json!("RAJ@northwind.example");
    assert_eq!(err(&v).location(), "users[2].email");
}

#[test]
fn primary_rows_are_one_per_person() {
    let mut v = example();
    v["candidates"][1]["job_id"] = Value::Null;
    v["candidates"][1]["stage_id"] = Value::Null;
    assert_eq!(err(&v).field.as_deref(), Some("person_id"));
    let mut v = example();
    v["candidates"][0]["stage_id"] = json!("778cbe98-6287-56d3-b104-3e1d79ecaba4");
    assert_eq!(err(&v).location(), "candidates[0].stage_id");
}

#[test]
fn rejected_needs_rejected_at() {
    let mut v = example();
    v["candidates"][1]["outcome"] = json!("rejected");
    assert_eq!(err(&v).location(), "candidates[1].rejected_at");
}

#[test]
fn bad_attachment_prefix_and_base64() {
    let mut v = example();
    v["attachments"][0]["id"] = json!("resume:1");
    assert_eq!(err(&v).location(), "attachments[0].id");
    let mut v = example();
    v["attachments"][0]["content_base64"] = json!("***");
    assert_eq!(err(&v).location(), "attachments[0].content_base64");
}

#[test]
fn top_level_rules() {
    let mut v = example();
    v["format"] = json!("recruit-snapshot/2");
    assert_eq!(err(&v).location(), "format");
    let mut v = example();
    v["extras"] = json!([]);
    assert_eq!(err(&v).location(), "extras");
    let mut v = example();
    v.as_object_mut().unwrap().remove("workspace");
    assert_eq!(err(&v).location(), "workspace");
    let mut v = example();
    v["workspace"]["default_region"] = json!("Britain");
    assert_eq!(err(&v).location(), "workspace.default_region");
    assert!(parse_slice(b"{not json").is_err());
}

#[test]
fn deletions_remove_records() {
    let p = plan(&example()).unwrap();
    let v = json!({
        "format": FORMAT,
        "workspace": example()["workspace"].clone(),
        "notes": [{"id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "deleted": true}],
        "attachments": [{"id": "cv:91b2d50e-a6b0-5581-b491-530642265a44", "deleted": true}]
    });
    let snap = parse_slice(&serde_json::to_vec(&v).unwrap()).unwrap();
    let q = plan_import(p.next.as_ref(), snap, &NoKeys, true).unwrap();
    assert_eq!(q.deleted["notes"], 1);
    assert_eq!(q.next.as_ref().unwrap().notes.len(), 1);
    assert_eq!(q.next.as_ref().unwrap().attachments.len(), 1);
}

/// Only an import into a workspace the store holds no record of may insert rather than
/// upsert: not one into a workspace with records, even at position 0 (a store written
/// before positions were kept).
#[test]
fn only_a_first_import_into_an_empty_workspace_is_fresh() {
    let p = plan(&example()).unwrap();
    assert!(p.changes.fresh && p.changes.unlogged);
    let empty = crate::state::WorkspaceState::new(p.workspace.clone());
    let snap = parse_slice(&serde_json::to_vec(&example()).unwrap()).unwrap();
    assert!(
        plan_import(Some(&empty), snap, &NoKeys, true)
            .unwrap()
            .changes
            .fresh
    );
    let mut held = p.next.unwrap();
    assert_eq!(held.position, 0);
    let snap = parse_slice(&serde_json::to_vec(&example()).unwrap()).unwrap();
    let q = plan_import(Some(&held), snap, &NoKeys, true).unwrap();
    assert!(!q.changes.fresh && q.changes.unlogged);
    held.position = 3;
    let snap = parse_slice(&serde_json::to_vec(&example()).unwrap()).unwrap();
    let q = plan_import(Some(&held), snap, &NoKeys, true).unwrap();
    assert!(!q.changes.fresh && !q.changes.unlogged);
}

#[test]
fn undoing_a_placement_cancels_its_open_tasks() {
    let mut v = example();
    v["candidates"][1]["outcome"] = json!("placed");
    v["tasks"][0]["placement_row_id"] = v["candidates"][1]["id"].clone();
    let p = plan(&v).unwrap();
    let task_id = Uuid::parse_str("9b9318fa-d687-5079-970e-cb43c3d145bb").unwrap();
    let before = p
        .next
        .as_ref()
        .unwrap()
        .tasks
        .get(&task_id)
        .unwrap()
        .updated_at;
    let mut w = json!({"format": FORMAT, "workspace": v["workspace"].clone()});
    let mut row = v["candidates"][1].clone();
    row["outcome"] = Value::Null;
    w["candidates"] = json!([row]);
    let snap = parse_slice(&serde_json::to_vec(&w).unwrap()).unwrap();
    let q = plan_import(p.next.as_ref(), snap, &NoKeys, true).unwrap();
    let t = q.next.as_ref().unwrap().tasks.get(&task_id).unwrap();
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert_eq!(t.completed_at, None);
    assert!(t.updated_at > before);
    assert!(q
        .changes
        .upserts
        .iter()
        .any(|r| matches!(r, Record::Task(t) if t.id == task_id)));
}

#[test]
fn a_new_default_region_renormalises_numbers() {
    let p = plan(&example()).unwrap();
    let leo = Uuid::parse_str("a214ca67-7691-5c62-8910-a410373e10c9").unwrap();
    let next = p.next.as_ref().unwrap();
    assert_eq!(
        next.candidates.get(&leo).unwrap().phone(),
        Some("+447700900123")
    );
    let mut ws = example()["workspace"].clone();
    ws["default_region"] = json!("US");
    let snap =
        parse_slice(&serde_json::to_vec(&json!({"format": FORMAT, "workspace": ws})).unwrap())
            .unwrap();
    let q = plan_import(p.next.as_ref(), snap, &NoKeys, true).unwrap();
    let next = q.next.as_ref().unwrap();
    // "07700 900123" is no longer a national UK number under the US region.
    assert_ne!(
        next.candidates.get(&leo).unwrap().phone(),
        Some("+447700900123")
    );
    let hana = Uuid::parse_str("c39ca419-8ea8-58e1-a02b-11d9dec22eb3").unwrap();
    assert_ne!(
        next.contacts.get(&hana).unwrap().phone.as_deref(),
        Some("+442079460011")
    );
}

/// The record count an import reports is what the next state holds, whether the file
/// adds, updates or deletes records.
#[test]
fn records_after_is_what_the_next_state_holds() {
    let first = plan(&example()).unwrap();
    let held = first.next.unwrap();
    assert_eq!(first.records_after, held.stored_records());
    assert!(first.records_after > 0);
    // Again, with a note deleted, an attachment deleted, a new note and the rest updated.
    let mut again = example();
    again["notes"][0] = json!({"id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "deleted": true});
    again["attachments"][1] =
        json!({"id": "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12", "deleted": true});
    let mut new_note = example()["notes"][1].clone();
    new_note["id"] = json!("0b1d2c3e-0000-4000-8000-000000000001");
    again["notes"].as_array_mut().unwrap().push(new_note);
    let snap = parse_slice(&serde_json::to_vec(&again).unwrap()).unwrap();
    let second = plan_import(Some(&held), snap, &NoKeys, true).unwrap();
    assert_eq!(
        second.records_after,
        second.next.as_ref().unwrap().stored_records()
    );
    assert_eq!(second.records_after, first.records_after - 1);
}

const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
const TERMS: &str = "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12";

fn plan_on(current: &WorkspaceState, v: &Value, next: bool) -> ImportPlan {
    let snap = parse_slice(&serde_json::to_vec(v).unwrap()).unwrap();
    plan_import(Some(current), snap, &NoKeys, next).unwrap()
}

#[test]
fn an_import_releases_the_objects_of_what_it_deletes() {
    let base = plan(&example()).unwrap().next.unwrap();
    let ws = base.id();
    assert!(released_objects(&plan_on(&base, &example(), true)).is_empty());
    let delete = json!({"format": "recruit-snapshot/1",
        "workspace": example()["workspace"].clone(), "attachments": [
        {"id": CV, "deleted": true},
        {"id": TERMS, "deleted": true},
        {"id": "file:never-there", "deleted": true},
    ]});
    let mut want = vec![
        object_key(ws, CV),
        object_key(ws, TERMS),
        object_key(ws, "file:never-there"),
    ];
    want.sort();
    for next in [true, false] {
        assert_eq!(released_objects(&plan_on(&base, &delete, next)), want);
    }
    // Deleting other records releases nothing.
    let other = json!({"format": "recruit-snapshot/1",
        "workspace": example()["workspace"].clone(),
        "notes": [{"id": "f24845c5-af3b-5f5c-8fe0-e0ed4e993ef7", "deleted": true}]});
    assert!(released_objects(&plan_on(&base, &other, true)).is_empty());
}

use super::scan::Trickle;

/// The example with `n` more notes (several batches of elements), pretty-printed.
fn with_many_notes(n: usize) -> Vec<u8> {
    let mut v = example();
    let note = v["notes"][0].clone();
    let notes = v["notes"].as_array_mut().unwrap();
    for i in 0..n {
        let mut extra = note.clone();
        extra["id"] = json!(uuid::Uuid::from_u128(0xdead_0000 + i as u128).to_string());
        extra["body_html"] = json!(format!("<p>\"{i}\" {{[\\ é</p>"));
        notes.push(extra);
    }
    serde_json::to_vec_pretty(&v).unwrap()
}

#[test]
fn a_document_read_a_few_bytes_at_a_time_parses_as_a_whole() {
    let bytes = with_many_notes(20_000);
    let whole = parse_slice(&bytes).unwrap();
    assert_eq!(whole.notes.len(), 20_002);
    for step in [1, 3, 4096] {
        // The slowest reader on a smaller document.
        let bytes = if step == 1 {
            with_many_notes(50)
        } else {
            bytes.clone()
        };
        let streamed = parse_reader(Trickle(&bytes, step)).unwrap();
        let sliced = parse_slice(&bytes).unwrap();
        assert_eq!(
            format!("{streamed:?}"),
            format!("{sliced:?}"),
            "step {step}"
        );
    }
}

#[test]
fn an_error_deep_in_a_large_array_names_its_index() {
    let mut v: Value = serde_json::from_slice(&with_many_notes(20_000)).unwrap();
    v["notes"][15_000]["created_at"] = json!("yesterday");
    let e = err(&v);
    assert_eq!(e.location(), "notes[15000].created_at", "{e}");
    // Not JSON inside an element (its brackets whole): still named by array and index.
    let mut bytes = serde_json::to_vec(&v).unwrap();
    let at = bytes.windows(9).position(|w| w == b"yesterday").unwrap();
    bytes[at - 1] = b' ';
    bytes[at + 9] = b' ';
    let e = parse_slice(&bytes).unwrap_err();
    assert_eq!(e.location(), "notes[15000]", "{e}");
}

#[test]
fn document_level_errors() {
    let bad = |doc: &str| parse_slice(doc.as_bytes()).unwrap_err();
    let ws = r#""workspace": {"id": "b2574901-bbf6-5245-9d3f-3dd074396143"}"#;
    let ok = format!(r#"{{"format": "recruit-snapshot/1", {ws}, "notes": null}}"#);
    assert!(parse_slice(ok.as_bytes()).unwrap().notes.is_empty());
    let e = bad(&format!(
        r#"{{"format": "recruit-snapshot/1", {ws}, "notes": {{}}}}"#
    ));
    assert_eq!(
        (e.location(), e.message.as_str()),
        ("notes".into(), "must be an array")
    );
    let e = bad(&format!(
        r#"{{"format": "recruit-snapshot/1", {ws}, "users": [], "users": []}}"#
    ));
    assert_eq!(
        (e.location(), e.message.as_str()),
        ("users".into(), "appears twice")
    );
    for doc in [
        format!("{ok} x"),
        format!(r#"{{"format": "recruit-snapshot/1", {ws}"#),
        format!(r#"{{"format": "recruit-snapshot/1", {ws}, "users": [{{"id": "#),
        format!(r#"{{"format": "recruit-snapshot/1" {ws}}}"#),
        "[]".to_string(),
        String::new(),
    ] {
        let e = bad(&doc);
        assert!(
            e.message.starts_with("not a valid snapshot document"),
            "{doc}: {e}"
        );
    }
    assert_eq!(bad("{}").location(), "format");
}

/// Candidate rows are normalised as they are parsed when the workspace came first in
/// the document, and by the plan otherwise: with the same region either way.
#[test]
fn numbers_are_normalised_with_the_workspace_region_wherever_it_comes() {
    let v = example();
    let leo = Uuid::parse_str("a214ca67-7691-5c62-8910-a410373e10c9").unwrap();
    let phone = |doc: String| {
        let snap = parse_slice(doc.as_bytes()).unwrap();
        let p = plan_import(None, snap, &NoKeys, true).unwrap();
        let next = p.next.unwrap();
        let row = next.candidates.get(&leo).unwrap().clone();
        (row.phone().map(str::to_string), p.packed.candidates.len())
    };
    let member = |k: &str| format!("{:?}: {}", k, v[k]);
    let keys = [
        "users",
        "pipeline_stages",
        "companies",
        "contacts",
        "jobs",
        "candidates",
    ];
    let rest: Vec<String> = keys.iter().map(|k| member(k)).collect();
    let first = format!(
        "{{\"format\": {:?}, {}, {}}}",
        FORMAT,
        member("workspace"),
        rest.join(", ")
    );
    let last = format!(
        "{{\"format\": {:?}, {}, {}}}",
        FORMAT,
        rest.join(", "),
        member("workspace")
    );
    assert_eq!(phone(first), (Some("+447700900123".into()), 2));
    assert_eq!(phone(last), (Some("+447700900123".into()), 2));
}

/// An import larger than one part of the commit is in the store whole: every record
/// once, the deletions and the keys with the last part.
#[tokio::test]
async fn an_import_in_several_parts_is_in_the_store_whole() {
    use crate::env::ActorEnv;
    use crate::keys::KeyRing;
    use crate::store::{MemoryBlobs, MemoryStore, Store};
    let store = MemoryStore::new();
    let env = ActorEnv::new(
        store.clone(),
        Arc::new(MemoryBlobs::default()),
        Arc::new(KeyRing::default()),
    );
    let p = plan(&example()).unwrap();
    let want = p.change_set();
    assert!(p.packed.len() > super::apply::COMMIT_PART, "several parts");
    let id = p.workspace.id;
    p.apply(&env, uuid::Uuid::new_v4()).await.unwrap();
    let mut loaded = Vec::new();
    store
        .load_records(id, &mut |r| loaded.push(r.to_json()))
        .await
        .unwrap();
    let mut expected: Vec<String> = want.upserts.iter().map(|r| r.to_json()).collect();
    loaded.sort();
    expected.sort();
    assert_eq!(loaded, expected);
    assert_eq!(store.keys().await.unwrap().len(), want.keys.len());
    assert!(store.position(id).await.unwrap().seq >= 3);
}

/// The packed records read a part at a time are the whole list, in order, whatever the
/// part size and wherever the parts cross from one kind to the next.
#[test]
fn packed_records_in_parts_are_the_whole_list() {
    let p = plan(&example()).unwrap();
    let packed = &p.packed;
    assert!(!packed.candidates.is_empty() && !packed.notes.is_empty());
    assert!(!packed.attachments.is_empty());
    let whole: Vec<String> = packed
        .records(0, packed.len())
        .iter()
        .map(|r| r.to_json())
        .collect();
    assert_eq!(whole.len(), packed.len());
    for size in 1..=packed.len() + 1 {
        let mut parts = Vec::new();
        let mut from = 0;
        while from < packed.len() {
            let part = packed.records(from, size);
            assert!(!part.is_empty() && part.len() <= size);
            from += part.len();
            parts.extend(part.iter().map(|r| r.to_json()));
        }
        assert_eq!(parts, whole, "parts of {size}");
    }
    assert!(packed.records(packed.len(), 5).is_empty());
    assert!(packed.records(packed.len() + 3, 5).is_empty());
}

/// The blob store of `blobs_are_durable_before_any_record_names_them`: slow, and failing
/// when told to.
struct SlowBlobs {
    inner: crate::store::MemoryBlobs,
    fail: bool,
}

impl crate::store::BlobStore for SlowBlobs {
    fn put(&self, ws: uuid::Uuid, id: &str, bytes: &[u8]) -> StoreResult<()> {
        self.inner.put(ws, id, bytes)
    }
    fn put_many(&self, ws: uuid::Uuid, items: &[(String, Vec<u8>)]) -> StoreResult<()> {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if self.fail {
            return Err(StoreError::Other("disk full".into()));
        }
        items
            .iter()
            .try_for_each(|(id, bytes)| self.inner.put(ws, id, bytes))
    }
    fn stat(&self, ws: uuid::Uuid, id: &str) -> StoreResult<Option<crate::store::BlobMeta>> {
        self.inner.stat(ws, id)
    }
    fn open(&self, ws: uuid::Uuid, id: &str) -> StoreResult<Option<crate::store::Blob>> {
        self.inner.open(ws, id)
    }
    fn delete(&self, keys: &[String]) -> StoreResult<crate::store::Reclaimed> {
        self.inner.delete(keys)
    }
    fn sweep(
        &self,
        ws: uuid::Uuid,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> StoreResult<crate::store::Reclaimed> {
        self.inner.sweep(ws, keep)
    }
}

/// A store that, whenever an attachment record is committed, checks that the blob
/// store already holds its bytes.
struct CheckingStore {
    inner: Arc<crate::store::MemoryStore>,
    blobs: Arc<SlowBlobs>,
    /// The attachments that come with bytes.
    with_bytes: std::collections::HashSet<String>,
    parts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl crate::store::Store for CheckingStore {
    async fn workspaces(&self) -> StoreResult<Vec<crate::model::Workspace>> {
        self.inner.workspaces().await
    }
    async fn load_records(
        &self,
        ws: uuid::Uuid,
        sink: crate::store::RecordSink<'_>,
    ) -> StoreResult<()> {
        self.inner.load_records(ws, sink).await
    }
    async fn commit(&self, ws: uuid::Uuid, changes: &ChangeSet) -> StoreResult<()> {
        for r in &changes.upserts {
            let with_bytes = |a: &crate::model::Attachment| self.with_bytes.contains(&a.id);
            if let crate::model::Record::Attachment(a) = r {
                if !with_bytes(a) {
                    continue;
                }
                let held = crate::store::BlobStore::stat(&*self.blobs, ws, &a.id).unwrap();
                assert!(held.is_some(), "{} committed before its bytes", a.id);
            }
        }
        self.parts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.commit(ws, changes).await
    }
    async fn read_changes(
        &self,
        workspace: uuid::Uuid,
        window: crate::store::LogWindow,
    ) -> StoreResult<crate::store::LogRead> {
        self.inner.read_changes(workspace, window).await
    }
    async fn tombstones(
        &self,
        workspace: uuid::Uuid,
    ) -> StoreResult<Vec<(crate::entries::Change, crate::time::Stamp)>> {
        self.inner.tombstones(workspace).await
    }
    async fn prune_changes(
        &self,
        workspace: uuid::Uuid,
        before_ms: i64,
    ) -> StoreResult<crate::store::Pruned> {
        self.inner.prune_changes(workspace, before_ms).await
    }
    async fn committed(&self, ws: uuid::Uuid, batch: uuid::Uuid) -> StoreResult<bool> {
        self.inner.committed(ws, batch).await
    }
    async fn flush_touched(
        &self,
        ws: uuid::Uuid,
        position: u64,
        rows: &[crate::model::Record],
    ) -> StoreResult<()> {
        self.inner.flush_touched(ws, position, rows).await
    }
    async fn touches(
        &self,
        workspaces: &[uuid::Uuid],
    ) -> StoreResult<Vec<Option<crate::store::TouchMarker>>> {
        self.inner.touches(workspaces).await
    }
    async fn position(&self, ws: uuid::Uuid) -> StoreResult<crate::store::CommitPosition> {
        self.inner.position(ws).await
    }
    async fn keys(&self) -> StoreResult<Vec<crate::model::ApiKey>> {
        self.inner.keys().await
    }
    async fn revoke_key(&self, id: &str) -> StoreResult<Option<crate::model::ApiKey>> {
        self.inner.revoke_key(id).await
    }
}

/// The bytes are written beside the commit, but every attachment record is committed
/// only once they are durable; a blob write that fails after parts were committed
/// leaves the import unsure, and its mark is never written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blobs_are_durable_before_any_record_names_them() {
    use super::apply::ApplyError;
    use crate::env::ActorEnv;
    use crate::keys::KeyRing;
    use crate::store::{MemoryBlobs, MemoryStore, Store};
    for fail in [false, true] {
        let blobs = Arc::new(SlowBlobs {
            inner: MemoryBlobs::default(),
            fail,
        });
        let p = plan(&example()).unwrap();
        let store = Arc::new(CheckingStore {
            inner: MemoryStore::new(),
            blobs: blobs.clone(),
            with_bytes: p.blobs.iter().map(|(id, _)| id.clone()).collect(),
            parts: Default::default(),
        });
        let env = ActorEnv::new(store.clone(), blobs, Arc::new(KeyRing::default()));
        assert!(!p.blobs.is_empty() && !p.packed.candidates.is_empty());
        let id = p.workspace.id;
        let batch = uuid::Uuid::new_v4();
        let applied = p.apply(&env, batch).await;
        let parts = store.parts.load(std::sync::atomic::Ordering::SeqCst);
        if fail {
            assert!(matches!(applied, Err(ApplyError::Unsure(_))), "unsure");
            assert!(parts > 0, "parts were committed beside the blob write");
            assert!(!store.committed(id, batch).await.unwrap(), "no mark");
        } else {
            assert!(applied.is_ok());
            assert!(store.committed(id, batch).await.unwrap());
        }
    }
}

/// Where an error points: array, index, field.
fn place(e: &SnapshotError) -> (Option<&str>, Option<usize>, Option<&str>) {
    (e.array.as_deref(), e.index, e.field.as_deref())
}

/// A snapshot's key secrets must be strong enough to guard a workspace: short,
/// repetitive or unsendable ones are refused, naming the key and the field.
#[test]
fn weak_key_secrets_are_refused() {
    for weak in [
        "a",
        "password",
        "rk_short_123",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "abababababababababababababababab",
        "abcdeabcdeabcdeabcdeab",
        "rk_with space_0123456789abcdef",
        "rk_with_ünïcödé_0123456789abcdef",
    ] {
        let mut v = example();
        v["api_keys"][1]["secret"] = json!(weak);
        let e = err(&v);
        assert_eq!(
            place(&e),
            (Some("api_keys"), Some(1), Some("secret")),
            "{weak:?}: {e}"
        );
    }
    // As random as `recruitd key create` makes them, or as the contract's example.
    for strong in [
        crate::keys::new_key_secret(),
        "rk_other_secret_0123456789".to_string(),
        "0123456789abcdef0123456789abcdef".to_string(),
    ] {
        let mut v = example();
        v["api_keys"][1]["secret"] = json!(strong);
        assert!(plan(&v).is_ok(), "{strong:?}");
    }
}

/// A snapshot's key was made in the product, by an owner or administrator then; its
/// creator may be anything now (an administrator demoted since keeps access, and so
/// does the key). The creator must still be a user of the workspace, as the file or
/// else the workspace has them.
#[test]
fn a_keys_creator_is_any_user_of_the_workspace() {
    const RECRUITER: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
    let mut v = example();
    assert!(
        v["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["id"] == json!(RECRUITER) && u["role"] == json!("recruiter")),
        "the example has the recruiter"
    );
    v["api_keys"][0]["created_by"] = json!(RECRUITER);
    let planned = plan(&v).unwrap();
    assert!(
        planned
            .changes
            .keys
            .iter()
            .any(|k| k.created_by.to_string() == RECRUITER),
        "the recruiter's key is imported"
    );

    // Nobody of the workspace: refused, where it says.
    let stranger = "00000000-0000-4000-8000-00000000beef";
    v["api_keys"][0]["created_by"] = json!(stranger);
    let e = err(&v);
    assert_eq!(
        place(&e),
        (Some("api_keys"), Some(0), Some("created_by")),
        "{e}"
    );
    assert!(e.message.contains("does not exist"), "{e}");

    // A later file without users: the workspace's users count.
    let base = plan(&example()).unwrap().next.unwrap();
    let keys_only = |creator: &str| {
        json!({"format": "recruit-snapshot/1", "workspace": example()["workspace"].clone(),
               "api_keys": [{"id": "key_later", "secret": crate::keys::new_key_secret(),
                             "scopes": ["read"], "created_by": creator}]})
    };
    assert_eq!(
        plan_on(&base, &keys_only(RECRUITER), false)
            .changes
            .keys
            .len(),
        1
    );
    let snap = parse_slice(&serde_json::to_vec(&keys_only(stranger)).unwrap()).unwrap();
    let e = plan_import(Some(&base), snap, &NoKeys, false)
        .err()
        .unwrap();
    assert_eq!(e.field.as_deref(), Some("created_by"), "{e}");
}

/// Into a workspace that holds nothing, the state after an import is built while the
/// commit runs, and is the state the plan would have built; what the caller runs beside
/// the commit gets that state. Into one that holds records, it is built with the plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_built_while_committing_is_the_one_planned() {
    use crate::env::ActorEnv;
    use crate::keys::KeyRing;
    use crate::store::{MemoryBlobs, MemoryStore};
    let doc = serde_json::to_vec(&example()).unwrap();
    let planned = plan(&example()).unwrap().next.unwrap();
    let deferred = plan_import(
        None,
        parse_slice(&doc).unwrap(),
        &NoKeys,
        BuildNext::WhileCommitting,
    )
    .unwrap();
    assert!(deferred.next.is_none() && deferred.next_base.is_some());
    let env = ActorEnv::new(
        MemoryStore::new(),
        Arc::new(MemoryBlobs::default()),
        Arc::new(KeyRing::default()),
    );
    let (applied, beside) = deferred
        .apply_beside(&env, uuid::Uuid::new_v4(), |next| next.describe())
        .await
        .unwrap();
    let next = applied.next.expect("built");
    assert_eq!(next.describe(), planned.describe());
    assert_eq!(beside, Some(planned.describe()));
    assert_eq!(applied.report.records, planned.stored_records());

    let again = plan_import(
        Some(&next),
        parse_slice(&doc).unwrap(),
        &NoKeys,
        BuildNext::WhileCommitting,
    )
    .unwrap();
    assert!(again.next.is_some() && again.next_base.is_none());
}

/// An array of many batches (a few elements each in tests) is decoded in order, and its
/// first error in the document is the one reported, whichever batch finished first:
/// a field that does not decode before a malformed element, the malformed element
/// before a later bad field.
#[test]
fn arrays_of_many_batches_keep_their_order_and_their_first_error() {
    let notes = |n: usize| -> Vec<Value> {
        let template = example()["notes"][0].clone();
        (0..n)
            .map(|i| {
                let mut note = template.clone();
                note["id"] = json!(uuid::Uuid::from_u128(0x1000 + i as u128));
                note
            })
            .collect()
    };
    let doc = |notes: &[Value], malformed_at: Option<usize>| -> Vec<u8> {
        let mut v = example();
        v["notes"] = json!([]);
        let text = serde_json::to_string(&v).unwrap();
        let elements: Vec<String> = notes
            .iter()
            .enumerate()
            .map(|(i, n)| match malformed_at {
                // No comma after it: the scanner's error, not a decoder's.
                Some(at) if at == i => format!("{n} x"),
                _ => n.to_string(),
            })
            .collect();
        text.replacen(
            "\"notes\":[]",
            &format!("\"notes\":[{}]", elements.join(",")),
            1,
        )
        .into_bytes()
    };
    let many = notes(20);
    let snap = parse_slice(&doc(&many, None)).unwrap();
    let ids: Vec<uuid::Uuid> = snap
        .notes
        .iter()
        .map(|e| e.upsert().expect("an upsert").id())
        .collect();
    let want: Vec<uuid::Uuid> = (0..20).map(|i| uuid::Uuid::from_u128(0x1000 + i)).collect();
    assert_eq!(ids, want);

    let mut bad_field = many.clone();
    bad_field[5]["is_private"] = json!("perhaps");
    let e = parse_slice(&doc(&bad_field, Some(17))).unwrap_err();
    assert_eq!(place(&e), (Some("notes"), Some(5), Some("is_private")));
    let mut late = many.clone();
    late[17]["is_private"] = json!("perhaps");
    let e = parse_slice(&doc(&late, Some(11))).unwrap_err();
    assert!(
        e.message.starts_with("not a valid snapshot document"),
        "{e}"
    );
    let e = parse_slice(&doc(&late, None)).unwrap_err();
    assert_eq!(place(&e), (Some("notes"), Some(17), Some("is_private")));
}
