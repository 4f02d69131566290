//! Reclaiming attachment bytes: an import's deletion removes the attachment's object once
//! committed, a re-added attachment keeps (or gets) its bytes, live attachments' objects
//! are never touched, and objects a crash left behind are swept when the workspace loads.

use crate::helpers::*;
use actors::store::Store;
use base64::Engine;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const WS: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
/// Listed, but its bytes never arrived.
const TERMS: &str = "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12";
/// An attachment with bytes that no test deletes.
const KEPT: &str = "file:kept-contract";
const KEPT_BYTES: &[u8] = b"a contract nobody deletes";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn cv_bytes() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(
            example()["attachments"][0]["content_base64"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
}

/// The example, plus a company document with bytes.
fn example_with_kept() -> Value {
    let mut snap = example();
    snap["attachments"].as_array_mut().unwrap().push(json!({
        "id": KEPT,
        "parent_type": "company",
        "parent_id": FABRIKAM,
        "filename": "contract.txt",
        "content_type": "text/plain",
        "kind": "document",
        "content_base64": b64(KEPT_BYTES),
        "created_at": "2026-09-02T09:00:00.000Z",
        "updated_at": "2026-09-02T09:00:00.000Z"
    }));
    snap
}

/// A snapshot of the example workspace holding only `attachments`.
fn attachments(list: Value) -> Value {
    json!({"format": "recruit-snapshot/1", "workspace": example()["workspace"].clone(),
           "attachments": list})
}

fn deleted(id: &str) -> Value {
    json!({"id": id, "deleted": true})
}

/// The example's CV record, with `bytes` as its content.
fn cv_with(bytes: &[u8]) -> Value {
    let mut cv = example()["attachments"][0].clone();
    cv["content_base64"] = json!(b64(bytes));
    cv
}

fn blobs_dir(dir: &std::path::Path) -> PathBuf {
    dir.join("blobs")
}

/// Where an older data dir kept an attachment's bytes (a file of its own).
fn blob_path(dir: &std::path::Path, id: &str) -> PathBuf {
    recruitd::store::blobs::FileBlobs::new(blobs_dir(dir)).path_of(WS.parse().unwrap(), id)
}

/// The bytes the store holds for an attachment.
async fn stored(store: &Arc<dyn Store>, id: &str) -> Option<Vec<u8>> {
    store
        .blob(WS.parse().unwrap(), &actors::store::object_name(id))
        .await
        .unwrap()
}

/// Waits (a little) for the store to lose an attachment's bytes: removal follows the
/// import's answer.
async fn gone(store: &Arc<dyn Store>, id: &str) -> bool {
    for _ in 0..500 {
        if stored(store, id).await.is_none() {
            return true;
        }
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Waits (a little) for a file to disappear.
async fn file_gone(path: &std::path::Path) -> bool {
    for _ in 0..500 {
        if !path.exists() {
            return true;
        }
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// The attachment's bytes through the API: its signed URL, fetched without a key.
async fn download(app: &TestApp, id: &str) -> (StatusCode, Vec<u8>) {
    let path = format!(
        "/v1/attachments/{}/download?redirect=false",
        id.replace(':', "%3A")
    );
    let (s, body) = app.get(&path, READ_KEY).await;
    if s != StatusCode::OK {
        return (s, Vec::new());
    }
    let url = body["data"]["url"].as_str().unwrap();
    let res = app.client.get(url).send().await.unwrap();
    let status = res.status();
    (status, res.bytes().await.unwrap().to_vec())
}

/// A sample's value; 0 when the series has no sample yet.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.parse().unwrap())
}

/// (objects, bytes) reclaimed so far `by` imports or sweeps.
async fn reclaimed(app: &TestApp, by: &str) -> (f64, f64) {
    let text = app.metrics_text().await;
    assert!(
        text.contains("# TYPE recruitd_blobs_reclaimed_bytes counter")
            && text.contains("# TYPE recruitd_blobs_reclaimed_objects counter"),
        "{text}"
    );
    (
        sample(
            &text,
            &format!("recruitd_blobs_reclaimed_objects_total{{by=\"{by}\"}}"),
        ),
        sample(
            &text,
            &format!("recruitd_blobs_reclaimed_bytes_total{{by=\"{by}\"}}"),
        ),
    )
}

async fn deleted_attachment_bytes_are_reclaimed(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example_with_kept()).await;
    let store = app.store.clone();
    assert_eq!(stored(&store, CV).await, Some(cv_bytes()));
    assert_eq!(stored(&store, KEPT).await.as_deref(), Some(KEPT_BYTES));
    // Kept in the store, not as files of the data dir.
    assert!(!blobs_dir(app.data_dir.path()).exists());

    let body = app
        .import_ok(&attachments(json!([deleted(CV), deleted(TERMS)])))
        .await;
    assert_eq!(body["data"]["deleted"]["attachments"], 2);
    assert!(gone(&store, CV).await, "the deleted CV's bytes");
    // The workspace's next job starts after the removal has been counted.
    app.import_ok(&attachments(json!([]))).await;
    assert_eq!(
        reclaimed(&app, "import").await,
        (1.0, cv_bytes().len() as f64),
        "one object (the TERMS record never had bytes)"
    );
    // The live attachment's bytes are untouched and still served.
    assert_eq!(stored(&store, KEPT).await.as_deref(), Some(KEPT_BYTES));
    assert_eq!(
        download(&app, KEPT).await,
        (StatusCode::OK, KEPT_BYTES.to_vec())
    );
    assert_eq!(download(&app, CV).await.0, 404);
    // Deleting what is already gone reclaims nothing more.
    app.import_ok(&attachments(json!([deleted(CV)]))).await;
    app.import_ok(&attachments(json!([]))).await;
    assert_eq!(
        reclaimed(&app, "import").await,
        (1.0, cv_bytes().len() as f64)
    );
    assert!(stored(&store, KEPT).await.is_some());
}

async fn readded_attachment_keeps_its_bytes(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example_with_kept()).await;
    let store = app.store.clone();
    // Deleting and re-adding in one import is refused whole (one id, twice): the bytes stay.
    let (s, body) = app
        .import(&attachments(json!([deleted(CV), cv_with(b"new")])))
        .await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(download(&app, CV).await, (StatusCode::OK, cv_bytes()));

    // Deleted by one import, re-added with new bytes by the next: the new bytes stay.
    app.import_ok(&attachments(json!([deleted(CV)]))).await;
    app.import_ok(&attachments(json!([cv_with(b"second version")])))
        .await;
    // Later imports (which wait for any removal before them) leave them alone.
    app.import_ok(&attachments(json!([]))).await;
    assert_eq!(
        stored(&store, CV).await.as_deref(),
        Some(&b"second version"[..])
    );
    assert_eq!(
        download(&app, CV).await,
        (StatusCode::OK, b"second version".to_vec())
    );
    assert_eq!(
        download(&app, KEPT).await,
        (StatusCode::OK, KEPT_BYTES.to_vec())
    );

    // Imports queued back to back (a deletion, then the re-addition) never lose the bytes
    // of the one committed last.
    let (del, add) = (
        attachments(json!([deleted(CV)])),
        attachments(json!([cv_with(b"third version")])),
    );
    let (a, b) = futures_util::future::join(app.import(&del), async {
        actix_web::rt::time::sleep(Duration::from_millis(2)).await;
        app.import(&add).await
    })
    .await;
    assert_eq!((a.0, b.0), (StatusCode::OK, StatusCode::OK), "{a:?} {b:?}");
    app.import_ok(&attachments(json!([]))).await;
    let (_, now) = app
        .get(
            &format!("/v1/attachments/{}", CV.replace(':', "%3A")),
            READ_KEY,
        )
        .await;
    if now["data"].is_object() {
        assert_eq!(
            download(&app, CV).await,
            (StatusCode::OK, b"third version".to_vec()),
            "re-added last: its bytes are there"
        );
    } else {
        assert!(gone(&store, CV).await, "deleted last: reclaimed");
    }
}

async fn startup_sweep_removes_orphans(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_in(b.clone(), dir).await;
    app.import_ok(&example_with_kept()).await;
    // What a crash leaves: the bytes of an attachment whose deletion committed.
    let ws = WS.parse().unwrap();
    let orphan = vec![7u8; 1000];
    app.store
        .put_blobs(
            ws,
            &[(
                actors::store::object_name("cv:deleted-before-a-crash"),
                &orphan[..],
            )],
        )
        .await
        .unwrap();
    app.stop().await;
    let TestApp { data_dir, .. } = app;
    let root = data_dir.path().to_path_buf();
    // And what an older data dir may hold beside: such an object as a file, and a staged
    // write that never was renamed into place.
    std::fs::create_dir_all(blobs_dir(&root).join(WS)).unwrap();
    let orphan_file = blob_path(&root, "cv:deleted-before-a-crash");
    std::fs::write(&orphan_file, vec![7u8; 1000]).unwrap();
    let staged = blob_path(&root, "file:staged").with_extension("tmp4242");
    std::fs::write(&staged, vec![1u8; 24]).unwrap();
    // Files the blob store did not name are not its to remove.
    let foreign = blobs_dir(&root).join(WS).join("README.txt");
    std::fs::write(&foreign, b"left by an operator").unwrap();

    let again = spawn_app_in(b, data_dir).await;
    let store = again.store.clone();
    // The sweep runs once the workspace has loaded, off the path to ready.
    assert!(
        gone(&store, "cv:deleted-before-a-crash").await,
        "the orphan is swept"
    );
    assert!(file_gone(&orphan_file).await, "so is its file");
    assert!(file_gone(&staged).await, "and the staged leftover");
    assert!(foreign.exists());
    for _ in 0..500 {
        if reclaimed(&again, "sweep").await.0 >= 3.0 {
            break;
        }
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(reclaimed(&again, "sweep").await, (3.0, 2024.0));
    assert_eq!(download(&again, CV).await, (StatusCode::OK, cv_bytes()));
    assert_eq!(
        download(&again, KEPT).await,
        (StatusCode::OK, KEPT_BYTES.to_vec())
    );
    // The workspace takes imports as usual afterwards.
    again.import_ok(&attachments(json!([deleted(KEPT)]))).await;
    assert!(gone(&store, KEPT).await);
    assert_eq!(stored(&store, CV).await, Some(cv_bytes()));
}

/// A data dir written before the bytes moved into the store: its files are served,
/// replaced by the store's bytes when an import brings new ones, and removed with their
/// attachment.
async fn files_of_an_older_data_dir_are_still_served(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_in(b.clone(), dir).await;
    app.import_ok(&example_with_kept()).await;
    // The bytes as an older server left them: files, and nothing in the store.
    let ws = WS.parse().unwrap();
    let files = recruitd::store::blobs::FileBlobs::new(blobs_dir(app.data_dir.path()));
    actors::store::BlobStore::put(&files, ws, CV, b"cv from a file").unwrap();
    actors::store::BlobStore::put(&files, ws, KEPT, b"kept from a file").unwrap();
    let names = [
        actors::store::object_name(CV),
        actors::store::object_name(KEPT),
    ];
    app.store.delete_blobs(ws, &names).await.unwrap();
    app.stop().await;
    let TestApp { data_dir, .. } = app;
    let root = data_dir.path().to_path_buf();

    let again = spawn_app_in(b, data_dir).await;
    assert_eq!(
        download(&again, CV).await,
        (StatusCode::OK, b"cv from a file".to_vec())
    );
    // New bytes go to the store, and the file they replace goes.
    again
        .import_ok(&attachments(json!([cv_with(b"cv in the store")])))
        .await;
    assert_eq!(
        download(&again, CV).await,
        (StatusCode::OK, b"cv in the store".to_vec())
    );
    assert!(!blob_path(&root, CV).exists());
    // A deletion removes a file too.
    again.import_ok(&attachments(json!([deleted(KEPT)]))).await;
    assert!(file_gone(&blob_path(&root, KEPT)).await);
    assert_eq!(download(&again, KEPT).await.0, 404);
}

async fn offline_import_reclaims_deleted_bytes(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let url = match &b {
        Backend::Sqlite => None,
        Backend::Postgres(u) => Some(u.clone()),
    };
    let write = |name: &str, snap: &Value| {
        let f = dir.path().join(name);
        std::fs::write(&f, serde_json::to_vec(snap).unwrap()).unwrap();
        f
    };
    let (first, second) = (
        write("first.json", &example_with_kept()),
        write("second.json", &attachments(json!([deleted(CV)]))),
    );
    {
        let store = recruitd::store::open(url.as_deref(), dir.path())
            .await
            .unwrap();
        recruitd::cli::offline::import_files(store.clone(), dir.path(), &[first])
            .await
            .unwrap();
        assert_eq!(stored(&store, CV).await, Some(cv_bytes()));
        recruitd::cli::offline::import_files(store.clone(), dir.path(), &[second])
            .await
            .unwrap();
        assert_eq!(stored(&store, CV).await, None);
        assert_eq!(stored(&store, KEPT).await.as_deref(), Some(KEPT_BYTES));
        store.close().await;
    }
    let app = spawn_app_in(b, dir).await;
    assert_eq!(download(&app, CV).await.0, 404);
    assert_eq!(
        download(&app, KEPT).await,
        (StatusCode::OK, KEPT_BYTES.to_vec())
    );
    let (s, body) = app.get("/v1/counts?entities=attachments", READ_KEY).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"]["attachments"], 2, "TERMS and KEPT");
}

store_test!(
    deleted_attachment_bytes_are_reclaimed,
    readded_attachment_keeps_its_bytes,
    startup_sweep_removes_orphans,
    offline_import_reclaims_deleted_bytes,
    files_of_an_older_data_dir_are_still_served,
);
