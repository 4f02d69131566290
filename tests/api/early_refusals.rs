//! Early refusals: answers given before (or without) reading the whole request body
//! arrive whole, with their status and error envelope, every time. Without care the body
//! left unread makes the connection reset right behind the answer, and a client still
//! uploading loses the answer. Checked with reqwest and, where installed, with curl
//! (offering HTTP/2 by ALPN, as by default over https, and getting HTTP/1.1: the API
//! does not speak HTTP/2), 100 times per case.

use crate::helpers::*;
use reqwest::Method;
use serde_json::json;
use std::io::Write;
use std::process::Command;

/// One early refusal: what is sent, and the answer it must get.
struct Case {
    name: &'static str,
    method: &'static str,
    key: Option<String>,
    /// `None`: no `Content-Type` header at all.
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

/// A JSON note body padded to `len` bytes: large enough to still be in flight when the
/// answer comes.
fn padded_body(len: usize) -> Vec<u8> {
    let mut body = serde_json::to_vec(
        &json!({"parent_type": "company", "parent_id": FABRIKAM, "body_html": ""}),
    )
    .unwrap();
    let pad = len.saturating_sub(body.len());
    // Inside the body_html string: `"body_html":""}` ends the object.
    let at = body.len() - 2;
    body.splice(at..at, std::iter::repeat_n(b'x', pad));
    body
}

async fn cases(app: &TestApp) -> Vec<Case> {
    // A key allowed one request a minute, used up at once: every later request is 429.
    let (s, created) = app
        .admin(
            Method::POST,
            "/admin/v1/keys",
            Some(&json!({
                "workspace_id": "b2574901-bbf6-5245-9d3f-3dd074396143",
                "created_by_email": "olivia@northwind.example",
                "scopes": ["notes:write"], "rate_limit_per_minute": 1
            })),
        )
        .await;
    assert_eq!(s, 200, "{created}");
    let limited = created["data"]["secret"].as_str().unwrap().to_string();
    let (s, _) = app.get("/v1/counts?entities=users", &limited).await;
    assert_eq!(s, 200);

    let small = padded_body(64 * 1024);
    let json = Some("application/json");
    let case = |name, method, key: Option<&str>, content_type, body: &Vec<u8>, status, code| Case {
        name,
        method,
        key: key.map(str::to_string),
        content_type,
        body: body.clone(),
        status,
        code,
    };
    vec![
        case(
            "no Content-Type",
            "POST",
            Some(WRITE_KEY),
            None,
            &small,
            400,
            "BAD_REQUEST",
        ),
        case(
            "form Content-Type (curl -d)",
            "POST",
            Some(WRITE_KEY),
            Some("application/x-www-form-urlencoded"),
            &small,
            400,
            "BAD_REQUEST",
        ),
        case("no key", "POST", None, json, &small, 401, "UNAUTHORIZED"),
        case(
            "unknown key",
            "POST",
            Some("rk_nobody_0123456789abcdef"),
            json,
            &small,
            401,
            "UNAUTHORIZED",
        ),
        case(
            "read key on a write",
            "POST",
            Some(READ_KEY),
            json,
            &small,
            403,
            "FORBIDDEN_SCOPE",
        ),
        case(
            "wrong method",
            "PUT",
            Some(WRITE_KEY),
            json,
            &small,
            405,
            "METHOD_NOT_ALLOWED",
        ),
        case(
            "body over 1 MiB",
            "POST",
            Some(WRITE_KEY),
            json,
            &padded_body(1024 * 1024 + 1),
            400,
            "BAD_REQUEST",
        ),
        case(
            "body of 3 MiB",
            "POST",
            Some(WRITE_KEY),
            json,
            &padded_body(3 * 1024 * 1024),
            400,
            "BAD_REQUEST",
        ),
        case(
            "rate limited",
            "POST",
            Some(&limited),
            json,
            &small,
            429,
            "RATE_LIMITED",
        ),
    ]
}

#[actix_web::test]
async fn early_refusals_arrive_whole() {
    let app = spawn_app(Backend::Sqlite).await;
    app.import_ok(&example()).await;
    let cases = cases(&app).await;
    let base = app.base.replace("localhost", "127.0.0.1");

    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(&app.tls_cert_pem).unwrap())
        .build()
        .unwrap();
    for case in &cases {
        for _ in 0..100 {
            let mut req = client
                .request(case.method.parse().unwrap(), format!("{base}/v1/notes"))
                .body(case.body.clone());
            if let Some(k) = &case.key {
                req = req.bearer_auth(k);
            }
            if let Some(ct) = case.content_type {
                req = req.header("content-type", ct);
            }
            let res = req
                .send()
                .await
                .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
            assert_eq!(res.version(), reqwest::Version::HTTP_11, "{}", case.name);
            let (status, body) = json_of(res).await;
            assert_error(status, &body, case.status, case.code);
        }
    }

    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl is not installed: its part of the test not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &app.tls_cert_pem).unwrap();
    for (i, case) in cases.iter().enumerate() {
        let body_file = dir.path().join(format!("body-{i}"));
        std::fs::File::create(&body_file)
            .unwrap()
            .write_all(&case.body)
            .unwrap();
        // One curl run sends the case 100 times in turn, each on a stream of its own
        // (one connection, reused), and prints every transfer's status and exit code.
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "--http2", "--cacert"])
            .arg(&ca)
            .args(["-X", case.method, "--data-binary"])
            .arg(format!("@{}", body_file.display()))
            .args(["-w", "%{http_code} %{exitcode} %{http_version}\\n"]);
        // `Content-Type:` with nothing after it removes curl's own header.
        cmd.args([
            "-H",
            &format!("Content-Type:{}", case.content_type.unwrap_or("")),
        ]);
        if let Some(k) = &case.key {
            cmd.args(["-H", &format!("Authorization: Bearer {k}")]);
        }
        for _ in 0..100 {
            cmd.args(["-o", "/dev/null", &format!("{base}/v1/notes")]);
        }
        let out = cmd.output().unwrap();
        let lines = String::from_utf8_lossy(&out.stdout);
        let want = format!("{} 0 1.1", case.status);
        let arrived = lines.lines().filter(|l| *l == want).count();
        assert_eq!(
            arrived, 100,
            "{}: {arrived} of 100 answers arrived whole over HTTP/1.1 (`status exit version` \
             per try):\n{lines}",
            case.name
        );
    }
    app.stop_now().await;
}

/// HTTP/2 is not offered: a client that insists on it fails its TLS handshake, and curl
/// (offering h2 and http/1.1) is answered over HTTP/1.1.
#[actix_web::test]
async fn http2_is_not_spoken() {
    let app = spawn_app(Backend::Sqlite).await;
    app.import_ok(&example()).await;
    let base = app.base.replace("localhost", "127.0.0.1");
    let h2_only = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(&app.tls_cert_pem).unwrap())
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let err = h2_only
        .get(format!("{base}/v1/counts"))
        .bearer_auth(READ_KEY)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");

    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl is not installed: its part of the test not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &app.tls_cert_pem).unwrap();
    let out = Command::new("curl")
        .args(["-s", "--http2", "--cacert"])
        .arg(&ca)
        .args(["-H", &format!("Authorization: Bearer {READ_KEY}")])
        .args(["-o", "/dev/null", "-w", "%{http_code} %{http_version}"])
        .arg(format!("{base}/v1/counts"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200 1.1");
    app.stop_now().await;
}
