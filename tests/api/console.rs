//! The operator console on the admin listener: its login (the admin token once, then a
//! session cookie that is HttpOnly, SameSite=Strict and never the token), the page and
//! its JSON refused without a session, the session authorising the console's reads and
//! no write (imports, keys) nor any other admin path, logout; the overview, search and
//! one workspace's description against what the API says; the live traffic from the
//! request histograms; secrets kept out of answers and logs. On PostgreSQL, with three
//! real nodes: a node that holds no copy describes a workspace from a holder's, and a
//! node killed shows as not alive within the lease and two seconds.

use crate::helpers::*;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::time::{Duration, Instant};

const WORKSPACE: &str = "b2574901-bbf6-5245-9d3f-3dd074396143";

/// The JSON paths of the console.
const DATA_PATHS: [&str; 4] = [
    "/admin/v1/console/overview",
    "/admin/v1/console/traffic",
    "/admin/v1/console/workspaces?q=north",
    "/admin/v1/console/workspaces/b2574901-bbf6-5245-9d3f-3dd074396143",
];

/// Logs in with `token`; the status, the `Set-Cookie` header (if any) and the body.
async fn login_with(
    client: &reqwest::Client,
    admin: &str,
    token: &str,
) -> (
    StatusCode,
    Option<String>,
    reqwest::header::HeaderMap,
    String,
) {
    let res = client
        .post(format!("{admin}/admin/console/login"))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let cookie = headers
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string());
    (status, cookie, headers, res.text().await.unwrap())
}

/// A session's `Cookie` header value, from a login with the admin token.
pub(crate) async fn session(client: &reqwest::Client, admin: &str, token: &str) -> String {
    let (status, cookie, headers, _) = login_with(client, admin, token).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers["location"], "/admin/console");
    let cookie = cookie.expect("a session cookie");
    cookie.split(';').next().unwrap().to_string()
}

/// A request on the admin listener with a `Cookie` header.
async fn call(app: &TestApp, method: Method, path: &str, cookie: &str) -> reqwest::Response {
    app.client
        .request(method, format!("{}{path}", app.admin_base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
}

/// A GET on the admin listener with the session's cookie.
async fn with_cookie(app: &TestApp, path: &str, cookie: &str) -> (StatusCode, Value) {
    json_of(call(app, Method::GET, path, cookie).await).await
}

fn csp_of(res: &reqwest::Response) -> String {
    res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string()
}

async fn login_gives_a_session_that_reads_the_console_and_nothing_else(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let page = format!("{}/admin/console", app.admin_base);

    // Without a session: the page is the login form, answered 401, and no data.
    let res = app.client.get(&page).send().await.unwrap();
    assert_eq!(res.status(), 401);
    assert!(csp_of(&res).starts_with("default-src 'none'; script-src 'self'"));
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let body = res.text().await.unwrap();
    assert!(body.contains("action=\"/admin/console/login\""), "{body}");
    assert!(!body.contains("nodes"), "the login form shows no data");
    for path in DATA_PATHS {
        let res = app
            .client
            .get(format!("{}{path}", app.admin_base))
            .send()
            .await
            .unwrap();
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 401, "UNAUTHORIZED");
        // A cookie that names no session is no better.
        let (s, body) =
            with_cookie(&app, path, &format!("recruitd_console={}", "A".repeat(43))).await;
        assert_error(s, &body, 401, "UNAUTHORIZED");
    }

    // A wrong token opens nothing.
    let (status, cookie, _, body) = login_with(&app.client, &app.admin_base, "wrong").await;
    assert_eq!(status, 401);
    assert!(cookie.is_none());
    assert!(body.contains("not the admin token"), "{body}");

    // The token opens a session: a random id in a cookie kept from scripts and other
    // sites, for the admin paths, for 8 hours; never the token.
    let (status, set_cookie, _, _) =
        login_with(&app.client, &app.admin_base, &app.admin_token).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let set_cookie = set_cookie.unwrap();
    let attributes: Vec<&str> = set_cookie.split("; ").collect();
    let (name, id) = attributes[0].split_once('=').unwrap();
    assert_eq!(name, "recruitd_console");
    assert_eq!(id.len(), 43);
    assert_eq!(
        &attributes[1..],
        &[
            "Path=/admin",
            "Max-Age=28800",
            "HttpOnly",
            "SameSite=Strict"
        ]
    );
    assert!(!set_cookie.contains(&app.admin_token));
    let cookie = attributes[0].to_string();
    // A second login is another session.
    let other = session(&app.client, &app.admin_base, &app.admin_token).await;
    assert_ne!(other, cookie);

    let res = call(&app, Method::GET, "/admin/console", &cookie).await;
    assert_eq!(res.status(), 200);
    assert!(csp_of(&res).contains("connect-src 'self'"));
    assert_eq!(res.headers()["cache-control"], "no-store");
    assert_eq!(res.headers()["x-frame-options"], "DENY");
    let body = res.text().await.unwrap();
    assert!(body.contains("src=\"/admin/console/console.js\""), "{body}");
    for asset in ["console.js", "console.css"] {
        let res = app
            .client
            .get(format!("{page}/{asset}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{asset}");
    }
    for path in DATA_PATHS {
        let (s, body) = with_cookie(&app, path, &cookie).await;
        assert_eq!(s, 200, "{path}: {body}");
        // The token as a bearer reads them too (scripts).
        let (s, _) = app.admin(Method::GET, path, None).await;
        assert_eq!(s, 200, "{path}");
    }

    // The cookie authorises no write, and no other admin path: they take the token.
    let writes = [
        (Method::POST, "/admin/v1/import", Some(example())),
        (
            Method::POST,
            "/admin/v1/keys",
            Some(
                serde_json::json!({"workspace_id": WORKSPACE, "created_by_email": "olivia@northwind.example", "scopes": ["notes:write"]}),
            ),
        ),
        (Method::DELETE, "/admin/v1/keys/key_demo_read", None),
        (Method::GET, "/admin/v1/cluster", None),
        (Method::GET, "/admin/v1/ready", None),
        (Method::GET, "/metrics", None),
    ];
    for (method, path, body) in writes {
        let mut r = app
            .client
            .request(method.clone(), format!("{}{path}", app.admin_base))
            .header("cookie", &cookie);
        if let Some(b) = &body {
            r = r.json(b);
        }
        let (s, answer) = json_of(r.send().await.unwrap()).await;
        assert_error(s, &answer, 401, "UNAUTHORIZED");
    }
    // Nothing was revoked.
    let (s, _) = app.get("/v1/counts", READ_KEY).await;
    assert_eq!(s, 200);

    // Logging out ends that session (and removes the cookie); the other lives on.
    let res = call(&app, Method::POST, "/admin/console/logout", &cookie).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(res.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    let (s, body) = with_cookie(&app, DATA_PATHS[0], &cookie).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    let (s, _) = with_cookie(&app, DATA_PATHS[0], &other).await;
    assert_eq!(s, 200);
    let res = call(&app, Method::GET, "/admin/console", &cookie).await;
    assert_eq!(res.status(), 401);
}

async fn the_console_shows_what_the_api_and_the_store_say(b: Backend) {
    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    let cookie = session(&app.client, &app.admin_base, &app.admin_token).await;

    let (s, overview) = with_cookie(&app, "/admin/v1/console/overview", &cookie).await;
    assert_eq!(s, 200, "{overview}");
    let o = &overview["data"];
    let me = o["node"].as_str().unwrap();
    assert_eq!(o["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(o["lease_ms"], 5000);
    let nodes = o["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{o}");
    assert_eq!(nodes[0]["name"], me);
    assert_eq!(nodes[0]["alive"], true);
    assert_eq!(nodes[0]["here"], true);
    assert_eq!(nodes[0]["version"], env!("CARGO_PKG_VERSION"));
    assert!(nodes[0]["renewed_ms_ago"].as_u64().unwrap() < 5000, "{o}");
    assert_eq!(nodes[0]["workspaces_written"], 1);
    let row = o["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == WORKSPACE)
        .unwrap_or_else(|| panic!("the workspace is listed: {o}"));
    assert_eq!(row["name"], "Northwind Talent");
    assert_eq!(row["writer"], me);
    let position = row["position"].as_u64().unwrap();
    assert!(position > 0, "{row}");
    assert_eq!(row["holders"][0]["node"], me);
    assert_eq!(row["holders"][0]["position"], position);

    // A write moves the position the overview shows (once the reused one is older than
    // half a second).
    assert_eq!(app.post_company_note("seen by the console").await.0, 201);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (_, overview) = with_cookie(&app, "/admin/v1/console/overview", &cookie).await;
        let now = overview["data"]["workspaces"][0]["position"]
            .as_u64()
            .unwrap();
        if now > position {
            break;
        }
        assert!(Instant::now() < deadline, "the position stayed {position}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Search by name (case aside) or id prefix; nothing for anything else.
    for q in ["north", "NORTHWIND", "b2574901"] {
        let (s, found) = with_cookie(
            &app,
            &format!("/admin/v1/console/workspaces?q={q}"),
            &cookie,
        )
        .await;
        assert_eq!(s, 200);
        assert_eq!(found["data"]["found"], 1, "{q}: {found}");
        assert_eq!(found["data"]["workspaces"][0]["id"], WORKSPACE);
        assert_eq!(found["data"]["workspaces"][0]["writer"], me);
    }
    let (_, found) = with_cookie(&app, "/admin/v1/console/workspaces?q=nobody", &cookie).await;
    assert_eq!(found["data"]["found"], 0);

    // One workspace: the API's counts, the keys without their secrets.
    let (s, detail) = with_cookie(
        &app,
        &format!("/admin/v1/console/workspaces/{WORKSPACE}"),
        &cookie,
    )
    .await;
    assert_eq!(s, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["name"], "Northwind Talent");
    assert_eq!(d["cluster"]["writer"], me);
    assert_eq!(d["copy_error"], Value::Null);
    let copy = &d["copy"];
    assert_eq!(copy["node"], me);
    let (_, counts) = app.get("/v1/counts", READ_KEY).await;
    assert_eq!(copy["counts"], counts["data"]);
    assert_eq!(copy["pruned_through"], 0);
    assert!(copy["position"].as_u64().unwrap() > position);
    assert_eq!(copy["webhooks"], serde_json::json!([]));
    let keys: Vec<&str> = copy["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec!["key_demo_read", "key_demo_write"]);
    assert_eq!(
        copy["keys"][1]["scopes"],
        serde_json::json!(["read", "notes:write", "tasks:write"])
    );
    assert_eq!(copy["keys"][0]["revoked"], false);
    let text = detail.to_string();
    for secret in [READ_KEY, WRITE_KEY, app.admin_token.as_str()] {
        assert!(!text.contains(secret), "a secret in the console's answer");
    }
    let hash: String = actors::model::hash_secret(READ_KEY)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        !text.contains(&hash),
        "a key's hash in the console's answer"
    );

    // Unknown or malformed ids.
    let (s, body) = with_cookie(
        &app,
        "/admin/v1/console/workspaces/00000000-0000-4000-8000-000000000000",
        &cookie,
    )
    .await;
    assert_error(s, &body, 404, "NOT_FOUND");
    let (s, body) = with_cookie(&app, "/admin/v1/console/workspaces/nope", &cookie).await;
    assert_error(s, &body, 400, "BAD_REQUEST");
}

/// The traffic endpoint's intervals hold exactly the requests answered, by route.
async fn traffic_is_sampled_from_the_request_histograms(b: Backend) {
    let app = spawn_app_with(b, tempfile::tempdir().unwrap(), |s| {
        s.console_sample_every = Duration::from_millis(100);
    })
    .await;
    app.import_ok(&example()).await;
    app.lookups_and_a_miss(25).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let series = loop {
        let (s, t) = app
            .admin(Method::GET, "/admin/v1/console/traffic", None)
            .await;
        assert_eq!(s, 200);
        let t = t["data"].clone();
        let total = |route: &str| -> u64 {
            t["routes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["route"] == route)
                .map_or(0, |r| {
                    r["requests"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(Value::as_u64)
                        .sum()
                })
        };
        if total("GET /v1/search/phone") == 25 && total("GET /v1/candidates/{id}") == 1 {
            break t;
        }
        assert!(Instant::now() < deadline, "{t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(series["sample_every_ms"], 100);
    assert_eq!(series["routes"][0]["route"], "all");
    let phone = series["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == "GET /v1/search/phone")
        .unwrap();
    let points = series["at_ms"].as_array().unwrap().len();
    for field in ["rate", "requests", "errors", "p50_ms", "p99_ms"] {
        assert_eq!(phone[field].as_array().unwrap().len(), points, "{field}");
    }
    // Where it answered, its percentiles are within the histogram's range, p50 ≤ p99.
    for (p50, p99) in phone["p50_ms"]
        .as_array()
        .unwrap()
        .iter()
        .zip(phone["p99_ms"].as_array().unwrap())
        .filter(|(p, _)| !p.is_null())
    {
        let (p50, p99) = (p50.as_f64().unwrap(), p99.as_f64().unwrap());
        assert!(0.0 < p50 && p50 <= p99 && p99 <= 13_108.0, "{p50} {p99}");
    }
    // The admin interface's own requests are not the API's traffic.
    assert!(series["routes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| !r["route"].as_str().unwrap().contains("admin")));
}

store_test!(
    login_gives_a_session_that_reads_the_console_and_nothing_else,
    the_console_shows_what_the_api_and_the_store_say,
    traffic_is_sampled_from_the_request_histograms,
);

/// A client of the admin listener that shows redirects rather than following them.
fn admin_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

async fn data_of(client: &reqwest::Client, url: &str, cookie: &str) -> Value {
    let res = client
        .get(url)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{url}");
    let body: Value = res.json().await.unwrap();
    body["data"].clone()
}

/// Neither the admin token nor a session id reaches the log, whatever the console was
/// asked.
async fn the_log_holds_no_token_and_no_session(b: Backend) {
    use crate::process::{prepare, Server};
    let dir = prepare(&b).await;
    let log = dir.path().join("server.log");
    let mut server = Server::start_logging(dir.path(), &b, Some(&log)).await;
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    let token = token.trim();
    let client = admin_client();
    let cookie = session(&client, &server.admin, token).await;
    let (_, id) = cookie.split_once('=').unwrap();
    for path in DATA_PATHS.iter().chain(&["/admin/console"]) {
        let res = client
            .get(format!("{}{path}", server.admin))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    // Refusals too: a wrong login, a forged session.
    let (s, _, _, _) = login_with(&client, &server.admin, "not-the-token").await;
    assert_eq!(s, 401);
    let res = client
        .get(format!("{}{}", server.admin, DATA_PATHS[0]))
        .header("cookie", format!("recruitd_console={}", "B".repeat(43)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let res = client
        .post(format!("{}/admin/console/logout", server.admin))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    server.signal("-TERM");
    server.child.wait().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().count() > 3, "{text}");
    assert!(!text.contains(token), "the admin token reached the log");
    assert!(!text.contains(id), "a session id reached the log");
    assert!(
        !text.contains(&"B".repeat(43)),
        "a presented cookie reached the log"
    );
}

store_test!(the_log_holds_no_token_and_no_session);

/// Three nodes on PostgreSQL: the console of the node that holds no copy of the
/// workspace shows every node with its version, the writer, and the workspace from a
/// holder's copy; a write through another node moves the position it shows; the writer
/// killed shows as not alive within the lease and two seconds, and its successor writes.
#[actix_web::test]
async fn a_console_sees_the_whole_cluster_from_a_node_without_a_copy() {
    crate::cluster::on_postgres(|b| async move {
        let ([mut writer, other, third], dirs, names, _keep) =
            crate::cluster::three_nodes_with(&b, &[]).await;
        let token = std::fs::read_to_string(dirs[2].join("admin-token")).unwrap();
        let client = admin_client();
        let cookie = session(&client, &third.admin, token.trim()).await;
        let overview_url = format!("{}/admin/v1/console/overview", third.admin);

        let o = data_of(&client, &overview_url, &cookie).await;
        assert_eq!(o["node"], names[2].as_str());
        let nodes = o["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3, "{o}");
        for n in nodes {
            assert_eq!(n["alive"], true, "{o}");
            assert_eq!(n["version"], env!("CARGO_PKG_VERSION"), "{o}");
            assert!(n["renewed_ms_ago"].as_u64().unwrap() < 5000, "{o}");
            assert_eq!(n["here"], n["name"] == names[2].as_str());
        }
        let row = o["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == WORKSPACE)
            .unwrap()
            .clone();
        assert_eq!(row["writer"], names[0].as_str(), "{row}");
        assert_eq!(
            row["name"], "Northwind Talent",
            "the name from the store: {row}"
        );
        let holders: Vec<&str> = row["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["node"].as_str().unwrap())
            .collect();
        assert!(!holders.contains(&names[2].as_str()), "{row}");

        // The workspace, described by a holder's copy over the node-to-node channel.
        let detail_url = format!("{}/admin/v1/console/workspaces/{WORKSPACE}", third.admin);
        let d = data_of(&client, &detail_url, &cookie).await;
        assert_eq!(d["copy_error"], Value::Null, "{d}");
        assert_eq!(
            d["copy"]["node"],
            names[0].as_str(),
            "the writer answers: {d}"
        );
        assert_eq!(d["copy"]["counts"]["candidates"], 2, "{d}");
        assert_eq!(d["copy"]["keys"][0]["id"], "key_demo_read", "{d}");
        assert!(!d.to_string().contains(READ_KEY));

        // A write through another node: the position moves on this node's console.
        let before = row["position"].as_u64().unwrap();
        let (s, _) = crate::cluster::post_note(&other, "through the other node").await;
        assert_eq!(s, 201);
        let started = Instant::now();
        loop {
            let o = data_of(&client, &overview_url, &cookie).await;
            if o["workspaces"][0]["position"].as_u64().unwrap() > before {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(2), "{o}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // The writer killed: not alive within the lease and two seconds; then the
        // other holder writes, and a copy describes the workspace (this node's own, once
        // placement gives it one in the dead node's stead).
        writer.signal("-KILL");
        writer.child.wait().await.unwrap();
        let killed = Instant::now();
        let dead = |o: &Value| {
            o["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["name"] == names[0].as_str() && n["alive"] == false)
        };
        loop {
            let o = data_of(&client, &overview_url, &cookie).await;
            if dead(&o) {
                break;
            }
            assert!(killed.elapsed() < Duration::from_secs(7), "{o}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        loop {
            let o = data_of(&client, &overview_url, &cookie).await;
            if o["workspaces"][0]["writer"] == names[1].as_str() {
                break;
            }
            assert!(killed.elapsed() < Duration::from_secs(20), "{o}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let d = data_of(&client, &detail_url, &cookie).await;
        let holders: Vec<&Value> = d["cluster"]["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| &h["node"])
            .collect();
        assert!(holders.contains(&&d["copy"]["node"]), "{d}");
        assert!(d["copy"]["node"] != names[0].as_str(), "{d}");
        drop((other, third));
    })
    .await;
}
