//! `GET /v1/attachments/{id}/download` and the signed URLs it hands out: redirect and
//! JSON forms, id parsing, unavailable bytes, expiry on a controlled clock, tampering,
//! bytes that vanish after signing (`NoSuchKey`), and awkward file names.

use crate::helpers::*;
use base64::Engine;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use recruitd::clock::Clock;
use recruitd::http::signed_urls::UrlSigner;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

const WS: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";
const CV: &str = "cv:91b2d50e-a6b0-5581-b491-530642265a44";
/// Listed, but its bytes never arrived.
const TERMS: &str = "clientfile:153147d7-ad43-526a-a42c-bd7e89dcfc12";
const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
/// 2026-09-21T14:13:20Z: where the manual clocks start.
const T: i64 = 1_790_000_000;

fn cv_bytes() -> Vec<u8> {
    let b64 = example()["attachments"][0]["content_base64"]
        .as_str()
        .unwrap()
        .to_string();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

fn delta() -> Value {
    json!({"format": "recruit-snapshot/1", "workspace": example()["workspace"].clone()})
}

async fn app_with(b: Backend, snapshot: &Value) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(snapshot).await;
    app
}

/// An app whose download clock is `clock`.
async fn app_at(b: Backend, clock: &Clock) -> TestApp {
    let clock = clock.clone();
    let app = spawn_app_with(b, tempfile::tempdir().unwrap(), move |s| s.clock = clock).await;
    app.import_ok(&example()).await;
    app
}

/// Loses an attachment's bytes from the store, as a fault would.
async fn lose_bytes(app: &TestApp, id: &str) {
    let removed = app
        .store
        .delete_blobs(WS.parse().unwrap(), &[actors::store::object_name(id)])
        .await
        .unwrap();
    assert_eq!(removed.objects, 1, "{id} had bytes");
}

/// The download path of an id, escaped as a client would.
fn download_path(id: &str) -> String {
    format!(
        "/v1/attachments/{}/download",
        utf8_percent_encode(id, NON_ALPHANUMERIC)
    )
}

/// The signed URL of a download, through the redirect; checks the redirect's headers.
async fn location(app: &TestApp, path: &str) -> String {
    let res = app
        .req(Method::GET, path, Some(READ_KEY))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FOUND, "{path}");
    let rid = res.headers()["x-request-id"].to_str().unwrap().to_string();
    assert!(rid.starts_with("req_") && rid.len() == 36, "{rid}");
    assert_eq!(res.headers()["cache-control"], "no-store");
    let url = res.headers()["location"].to_str().unwrap().to_string();
    assert!(
        res.text().await.unwrap().is_empty(),
        "a redirect has no body"
    );
    url
}

/// The signed URL of a download, through `redirect=false`.
async fn signed_url(app: &TestApp, id: &str) -> String {
    let (s, body) = app
        .get(&format!("{}?redirect=false", download_path(id)), READ_KEY)
        .await;
    assert_eq!(s, 200, "{body}");
    body["data"]["url"].as_str().unwrap().to_string()
}

/// Fetches a signed URL the way a client must: without the API key.
async fn fetch(app: &TestApp, url: &str) -> Response {
    app.client.get(url).send().await.unwrap()
}

/// A refusal or a missing object on the file route: the object store's own body, not
/// the API's envelope.
async fn store_answer(res: Response) -> (StatusCode, Value) {
    let status = res.status();
    assert!(res.headers().get("x-request-id").is_some());
    let (_, body) = json_of(res).await;
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys, ["code", "error", "message", "statusCode"], "{body}");
    assert!(
        body["error"].is_string(),
        "not the API's error object: {body}"
    );
    (status, body)
}

/// Signs like the server (same data dir key, same base), for objects the API would never
/// sign: tests of answers that must not depend on whether the object exists.
fn server_signer(app: &TestApp, any_url: &str) -> UrlSigner {
    let key = recruitd::server::secrets::signing_key(app.data_dir.path()).unwrap();
    let base = any_url.split("/files/").next().unwrap();
    UrlSigner::new(
        std::sync::Arc::new(actors::signing::Signer::from_secret(&key)),
        base,
    )
}

async fn redirect_to_a_signed_url_that_serves_the_bytes(b: Backend) {
    let app = app_with(b, &example()).await;
    let url = location(&app, &format!("/v1/attachments/{CV}/download")).await;
    let api_base = format!("https://127.0.0.1:{}", app.base.rsplit(':').next().unwrap());
    assert!(
        url.starts_with(&format!("{api_base}/files/{WS}/{CV}?expires=")),
        "under the public URL (default: the API's address): {url}"
    );
    assert!(url.contains("&signature="), "{url}");
    assert!(!url.contains(READ_KEY));
    let res = fetch(&app, &url).await;
    assert_eq!(res.status(), 200);
    let h = res.headers().clone();
    assert_eq!(h["content-type"], "application/pdf");
    assert_eq!(h["content-length"], "54");
    assert_eq!(
        h["content-disposition"],
        "attachment; filename=\"Leo Lambert CV.pdf\"; filename*=UTF-8''Leo%20Lambert%20CV.pdf"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(res.bytes().await.unwrap().to_vec(), cv_bytes());
    // No key is needed there, and a key sent anyway is not looked at.
    for key in [READ_KEY, "rk_not_a_key"] {
        let res = app.client.get(&url).bearer_auth(key).send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.bytes().await.unwrap().to_vec(), cv_bytes());
    }
    // Any value of `redirect` but `false` redirects.
    for q in [
        "?redirect=true",
        "?redirect=FALSE",
        "?redirect=",
        "?redirect=0",
        "?other=1",
    ] {
        location(&app, &format!("/v1/attachments/{CV}/download{q}")).await;
    }
}

async fn json_form_with_redirect_false(b: Backend) {
    let clock = Clock::manual(T);
    let app = app_at(b, &clock).await;
    let (s, body) = app
        .get(
            &format!("/v1/attachments/{CV}/download?redirect=false"),
            READ_KEY,
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body.as_object().unwrap().len(),
        2,
        "data and request_id: {body}"
    );
    assert!(body["request_id"].as_str().unwrap().starts_with("req_"));
    let url = body["data"]["url"].as_str().unwrap();
    assert!(
        url.contains(&format!("/files/{WS}/{CV}?expires={}&", T + 3600)),
        "{url}"
    );
    assert_eq!(
        body["data"],
        json!({"url": url, "signed": true, "expires_in": 3600,
               "filename": "Leo Lambert CV.pdf", "content_type": "application/pdf"})
    );
    let res = fetch(&app, url).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().to_vec(), cv_bytes());
    let (s, body) = app
        .get(
            &format!("/v1/attachments/{CV}/download?redirect=false&redirect=false"),
            READ_KEY,
        )
        .await;
    assert_error(s, &body, 400, "BAD_REQUEST");
}

async fn ids_raw_escaped_and_malformed(b: Backend) {
    let app = app_with(b, &example()).await;
    let ident = CV.strip_prefix("cv:").unwrap();
    for path in [
        format!("/v1/attachments/{CV}/download"),
        format!("/v1/attachments/cv%3A{ident}/download"),
        format!("/v1/attachments/cv%3a{ident}/download"),
        format!("/v1/attachments/%63v%3A{ident}/download"),
    ] {
        let url = location(&app, &path).await;
        assert_eq!(fetch(&app, &url).await.status(), 200, "{path}");
    }
    for bad in [
        ident.to_string(),
        format!("resume:{ident}"),
        format!("CV:{ident}"),
        format!(":{ident}"),
        "cv:".to_string(),
        "cv".to_string(),
        format!("cv%zz{ident}"),
        format!("cv%3:{ident}"),
        "cv%3A%ff".to_string(),
    ] {
        let (s, body) = app
            .get(&format!("/v1/attachments/{bad}/download"), READ_KEY)
            .await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
}

async fn unavailable_downloads_are_404(b: Backend) {
    let mut snap = example();
    snap["attachments"].as_array_mut().unwrap().push(
        json!({"id": "file:gone", "parent_type": "candidate", "parent_id": LEO_PRIMARY,
            "filename": "gone.txt", "kind": "document", "content_base64": "Z29uZQ==",
            "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}),
    );
    let app = app_with(b, &snap).await;
    let other = json!({
        "format": "recruit-snapshot/1",
        "workspace": {"id": "3e1c0de0-0000-4000-8000-000000000001", "name": "Other"},
        "users": [{"id": "3e1c0de0-0000-4000-8000-0000000000a1", "name": "O", "email": "o@other.example",
                   "role": "owner", "status": "active",
                   "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}],
        "companies": [{"id": "3e1c0de0-0000-4000-8000-0000000000c1", "name": "Theirs",
                       "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"}],
        "attachments": [{"id": "file:theirs", "parent_type": "company",
                         "parent_id": "3e1c0de0-0000-4000-8000-0000000000c1", "kind": "document",
                         "content_base64": "dGhlaXJz",
                         "created_at": "2026-09-02T00:00:00Z", "updated_at": "2026-09-02T00:00:00Z"}],
        "api_keys": [{"id": "key_other", "secret": "rk_other_secret_0123456789", "scopes": ["read"],
                      "created_by": "3e1c0de0-0000-4000-8000-0000000000a1"}]
    });
    app.import_ok(&other).await;
    // Their own key downloads it; ours cannot tell it from a missing one.
    let res = app
        .req(
            Method::GET,
            "/v1/attachments/file:theirs/download",
            Some("rk_other_secret_0123456789"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    // The stored file of one attachment is lost before anyone asks for it.
    lose_bytes(&app, "file:gone").await;
    for id in [
        "file:theirs",
        "cv:00000000-0000-4000-8000-000000000000",
        "file:91b2d50e-a6b0-5581-b491-530642265a44",
        TERMS,
        "file:gone",
    ] {
        for q in ["", "?redirect=false"] {
            let (s, body) = app
                .get(&format!("{}{q}", download_path(id)), READ_KEY)
                .await;
            assert_error(s, &body, 404, "NOT_FOUND");
        }
    }
    // The record is still listed.
    let (s, _) = app.get(&format!("/v1/attachments/{TERMS}"), READ_KEY).await;
    assert_eq!(s, 200);
}

async fn signed_urls_expire_on_the_second(b: Backend) {
    let clock = Clock::manual(T);
    let app = app_at(b, &clock).await;
    let url = signed_url(&app, CV).await;
    let never = server_signer(&app, &url)
        .sign(WS.parse().unwrap(), "cv:never-existed", T)
        .url;
    for t in [T, T + 1, T + 3599, T + 3600] {
        clock.set(t);
        let res = fetch(&app, &url).await;
        assert_eq!(res.status(), 200, "at T+{}", t - T);
        assert_eq!(res.bytes().await.unwrap().to_vec(), cv_bytes());
    }
    let mut refusals = Vec::new();
    for t in [T + 3601, T + 100_000] {
        clock.set(t);
        for u in [&url, &never] {
            let (s, body) = store_answer(fetch(&app, u).await).await;
            assert_eq!(s, 403, "at T+{}: {body}", t - T);
            assert_eq!(
                (&body["statusCode"], &body["code"]),
                (&json!("403"), &json!("AccessDenied"))
            );
            refusals.push(body);
        }
    }
    assert!(
        refusals.windows(2).all(|w| w[0] == w[1]),
        "an expired URL says nothing of its object: {refusals:?}"
    );
    // A URL asked for now is good for another hour.
    let fresh = signed_url(&app, CV).await;
    assert!(fresh.contains(&format!("expires={}&", T + 100_000 + 3600)));
    assert_eq!(fetch(&app, &fresh).await.status(), 200);
}

/// Every way of changing a signed URL, applied to `url`.
fn tamperings(url: &str, other_signature: &str) -> Vec<String> {
    let (path, query) = url.split_once('?').unwrap();
    let expires = query
        .split('&')
        .find_map(|p| p.strip_prefix("expires="))
        .unwrap();
    let signature = query
        .split('&')
        .find_map(|p| p.strip_prefix("signature="))
        .unwrap();
    let mut flipped = signature.to_string().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let later = (expires.parse::<i64>().unwrap() + 1).to_string();
    let (dir, object) = path.rsplit_once('/').unwrap();
    let other_ws = path.replace(WS, "3e1c0de0-0000-4000-8000-000000000001");
    vec![
        format!("{path}?expires={expires}&signature={flipped}"),
        format!(
            "{path}?expires={expires}&signature={}",
            &signature[..signature.len() - 2]
        ),
        format!("{path}?expires={expires}&signature={signature}A"),
        format!("{path}?expires={expires}&signature="),
        format!("{path}?expires={expires}"),
        format!("{path}?signature={signature}"),
        format!("{path}?expires={later}&signature={signature}"),
        format!("{path}?expires=0{expires}&signature={signature}"),
        format!("{path}?expires={expires}&signature={signature}&signature={signature}"),
        format!("{path}?expires={expires}&signature={other_signature}"),
        format!("{path}?expires={expires}&signature=%zz"),
        format!("{dir}/x{object}?expires={expires}&signature={signature}"),
        format!("{other_ws}?expires={expires}&signature={signature}"),
        path.to_string(),
    ]
}

async fn tampered_urls_are_refused_alike(b: Backend) {
    let clock = Clock::manual(T);
    let app = app_at(b, &clock).await;
    let url = signed_url(&app, CV).await;
    let signer = server_signer(&app, &url);
    let never = signer.sign(WS.parse().unwrap(), "cv:never-existed", T).url;
    let sig_of = |u: &str| u.rsplit("signature=").next().unwrap().to_string();
    let other_sig = sig_of(&signer.sign(WS.parse().unwrap(), TERMS, T).url);
    let mut bodies = Vec::new();
    for target in [&url, &never] {
        for bad in tamperings(target, &other_sig) {
            let (s, body) = store_answer(fetch(&app, &bad).await).await;
            assert_eq!(s, 403, "{bad}: {body}");
            bodies.push(body);
        }
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "one answer for every tampering, whatever the object: {bodies:?}"
    );
    assert_eq!(bodies[0]["code"], "AccessDenied");
    // A key from another data dir signs nothing this server accepts.
    let stranger = UrlSigner::new(
        std::sync::Arc::new(actors::signing::Signer::from_secret(&[9; 32])),
        url.split("/files/").next().unwrap(),
    )
    .sign(WS.parse().unwrap(), CV, T)
    .url;
    assert_eq!(
        store_answer(fetch(&app, &stranger).await).await.1,
        bodies[0]
    );
    // The untouched URL still works.
    assert_eq!(fetch(&app, &url).await.status(), 200);
}

async fn vanished_bytes_answer_no_such_key(b: Backend) {
    let app = app_with(b, &example()).await;
    let no_such_key = |body: &Value| {
        assert_eq!(body["statusCode"], "404", "{body}");
        assert_eq!(body["code"], "NoSuchKey", "{body}");
    };
    let expect_gone = |res: Response| async move {
        assert_eq!(res.headers()["content-type"], "application/json");
        let (s, body) = store_answer(res).await;
        assert_eq!(s, 400, "{body}");
        body
    };
    // Bytes removed from the blob store after signing.
    let url = signed_url(&app, CV).await;
    lose_bytes(&app, CV).await;
    let first = expect_gone(fetch(&app, &url).await).await;
    no_such_key(&first);
    // The bytes come back; then the record says they never arrived (re-imported without
    // content), then the record goes.
    let mut d = delta();
    d["attachments"] = json!([example()["attachments"][0].clone()]);
    app.import_ok(&d).await;
    assert_eq!(fetch(&app, &url).await.status(), 200);
    let mut bare = example()["attachments"][0].clone();
    bare.as_object_mut().unwrap().remove("content_base64");
    d["attachments"] = json!([bare]);
    app.import_ok(&d).await;
    no_such_key(&expect_gone(fetch(&app, &url).await).await);
    d["attachments"] = json!([{"id": CV, "deleted": true}]);
    app.import_ok(&d).await;
    no_such_key(&expect_gone(fetch(&app, &url).await).await);
    // Genuinely signed URLs for objects that never were, in this or no workspace.
    let signer = server_signer(&app, &url);
    let now = chrono::Utc::now().timestamp();
    for u in [
        signer.sign(WS.parse().unwrap(), TERMS, now).url,
        signer.sign(WS.parse().unwrap(), "file:never", now).url,
        signer
            .sign(
                "3e1c0de0-0000-4000-8000-000000000009".parse().unwrap(),
                CV,
                now,
            )
            .url,
    ] {
        assert_eq!(expect_gone(fetch(&app, &u).await).await, first, "{u}");
    }
}

async fn awkward_names_and_ids(b: Backend) {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut snap = example();
    let cases = [
        // id, filename, content type as recorded, served type, Content-Disposition
        (
            "file:a b/c?d#é%",
            Some("Zoë \"Q\" \\ back.txt"),
            Some("text/plain; charset=utf-8"),
            "text/plain; charset=utf-8",
            "attachment; filename=\"Zo_ _Q_ _ back.txt\"; filename*=UTF-8''Zo%C3%AB%20%22Q%22%20%5C%20back.txt",
        ),
        (
            "file:plain",
            Some("two  spaces, one 'quote'.pdf"),
            None,
            "application/octet-stream",
            "attachment; filename=\"two  spaces, one 'quote'.pdf\"; filename*=UTF-8''two%20%20spaces%2C%20one%20%27quote%27.pdf",
        ),
        (
            "cvdoc:履歴書",
            Some("履歴書.pdf"),
            Some("application/pdf"),
            "application/pdf",
            "attachment; filename=\"___.pdf\"; filename*=UTF-8''%E5%B1%A5%E6%AD%B4%E6%9B%B8.pdf",
        ),
        (
            "clientfile:unnamed",
            None,
            Some("not a type"),
            "application/octet-stream",
            "attachment; filename=\"unnamed\"; filename*=UTF-8''unnamed",
        ),
    ];
    for (i, (id, filename, ct, _, _)) in cases.iter().enumerate() {
        snap["attachments"].as_array_mut().unwrap().push(json!({
            "id": id, "parent_type": "candidate", "parent_id": LEO_PRIMARY,
            "filename": filename, "content_type": ct, "kind": "document",
            "content_base64": b64(&format!("bytes of {id} ({i})")),
            "created_at": "2026-09-01T00:00:00Z", "updated_at": "2026-09-01T00:00:00Z"
        }));
    }
    let app = app_with(b, &snap).await;
    for (i, (id, filename, _, served_type, disposition)) in cases.iter().enumerate() {
        let content = format!("bytes of {id} ({i})");
        let url = location(&app, &download_path(id)).await;
        let res = fetch(&app, &url).await;
        assert_eq!(res.status(), 200, "{id}: {url}");
        let h = res.headers().clone();
        assert_eq!(h["content-type"], *served_type, "{id}");
        assert_eq!(h["content-disposition"], *disposition, "{id}");
        assert_eq!(
            h["content-length"],
            content.len().to_string().as_str(),
            "{id}"
        );
        assert_eq!(res.text().await.unwrap(), content, "{id}");
        let (_, body) = app
            .get(&format!("{}?redirect=false", download_path(id)), READ_KEY)
            .await;
        let shown = filename.unwrap_or_else(|| id.split_once(':').unwrap().1);
        assert_eq!(body["data"]["filename"], shown, "{id}");
        assert_eq!(body["data"]["content_type"], *served_type, "{id}");
    }
}

async fn methods_and_keys(b: Backend) {
    let app = app_with(b, &example()).await;
    let path = format!("/v1/attachments/{CV}/download");
    let (s, body) = json_of(app.req(Method::GET, &path, None).send().await.unwrap()).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let url = location(&app, &path).await;
    for m in [Method::POST, Method::PUT, Method::DELETE] {
        let res = app
            .req(m.clone(), &path, Some(READ_KEY))
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["allow"], "GET");
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
        let res = app.client.request(m, &url).send().await.unwrap();
        assert_eq!(res.status(), 405);
        assert_eq!(res.headers()["allow"], "GET");
    }
    // Paths beside the file route are nobody's.
    for p in [
        "/files",
        &format!("/files/{WS}"),
        &format!("/files/{WS}/{CV}/more"),
    ] {
        let (s, body) = json_of(app.req(Method::GET, p, None).send().await.unwrap()).await;
        assert_error(s, &body, 404, "NOT_FOUND");
    }
}

store_test!(
    redirect_to_a_signed_url_that_serves_the_bytes,
    json_form_with_redirect_false,
    ids_raw_escaped_and_malformed,
    unavailable_downloads_are_404,
    signed_urls_expire_on_the_second,
    tampered_urls_are_refused_alike,
    vanished_bytes_answer_no_such_key,
    awkward_names_and_ids,
    methods_and_keys,
);
