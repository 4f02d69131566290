//! `serve --demo` as a newcomer meets it: the real binary on a fresh data dir prints a
//! key and ready-to-paste calls; README's tour is those same calls, and they work
//! against the demo (run with bash, curl and jq where installed, every HTTP error
//! failing the run); a restart on the same data says how to make a new key, and that
//! command works.

use crate::helpers::*;
use crate::process::{command, free_port};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// README's tour: the shell blocks of its "A short tour of the API" section.
fn readme_tour() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("## A short tour of the API")
        .expect("the tour section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| b[..b.find("```").expect("a closed block")].to_string())
        .collect()
}

/// Whether every program named is installed.
fn installed(programs: &[&str]) -> bool {
    programs.iter().all(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok()
    })
}

/// Runs `script` with bash in `dir`, with `curl` failing on every HTTP error; its output.
fn run_bash(dir: &Path, env: &[(&str, &str)], script: &str) -> String {
    let prelude = "set -euo pipefail\n\
                   curl() { command curl -sS --fail-with-body \"$@\"; echo; }\n";
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the tour failed:\n{script}\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

async fn the_readme_tour_works_against_the_demo(b: Backend) {
    let data = tempfile::tempdir().unwrap();
    let (api_port, admin_port) = (free_port(), free_port());
    let serve = |demo_out: Stdio, demo_err: Stdio| {
        let mut cmd = command(data.path(), &b);
        cmd.args([
            "serve",
            "--demo",
            "--listen",
            &format!("127.0.0.1:{api_port}"),
        ])
        .args(["--admin-listen", &format!("127.0.0.1:{admin_port}")])
        .stdout(demo_out)
        .stderr(demo_err)
        .kill_on_drop(true);
        cmd.spawn().unwrap()
    };

    // First start: the demo is loaded and its welcome printed.
    let mut server = serve(Stdio::piped(), Stdio::null());
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut welcome = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let last = line.contains("demo-call-1");
            welcome.push(line);
            if last {
                return;
            }
        }
        panic!("the demo ended its output early: {welcome:#?}");
    })
    .await
    .unwrap_or_else(|_| panic!("no demo welcome within 120 s: {welcome:#?}"));
    let text = welcome.join("\n");
    let export = welcome
        .iter()
        .map(|l| l.trim())
        .find(|l| l.starts_with("export KEY="))
        .unwrap_or_else(|| panic!("an export line: {text}"));
    let vars: Vec<(&str, &str)> = export["export ".len()..]
        .split(' ')
        .map(|kv| kv.split_once('=').unwrap())
        .collect();
    let var = |name: &str| vars.iter().find(|(k, _)| *k == name).unwrap().1;
    assert!(text.contains("API key id:   key_"), "the key's id: {text}");
    let key = var("KEY");
    let calls: Vec<&str> = welcome
        .iter()
        .skip_while(|l| !l.trim().starts_with("export KEY="))
        .skip(1)
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect();

    // README's first block is the export line (with a placeholder) and the same calls.
    let tour = readme_tour();
    assert_eq!(tour.len(), 2, "two blocks in README's tour: {tour:#?}");
    let mut first = tour[0].lines();
    assert_eq!(
        first.next(),
        Some(
            "export KEY=<the key the demo printed> CA=data/tls/cert.pem API=https://127.0.0.1:8443"
        )
    );
    assert_eq!(
        first.collect::<Vec<_>>(),
        calls,
        "README's tour is the demo's"
    );

    let workspace = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("workspace id: "))
        .unwrap()
        .to_string();
    let owner = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("owner:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();

    if installed(&["bash", "curl", "jq"]) {
        let cwd = tempfile::tempdir().unwrap();
        let env = [("KEY", key), ("CA", var("CA")), ("API", var("API"))];
        let out = run_bash(cwd.path(), &env, &calls.join("\n"));
        assert_eq!(
            out.matches("\"match_confidence\":\"exact\"").count(),
            3,
            "both numbers and the e-mail find one person: {out}"
        );
        let saved: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
        assert_eq!(saved.len(), 1, "the CV was saved under its own name");
        assert!(saved[0].as_ref().unwrap().metadata().unwrap().len() > 0);
        let note_id = |out: &str| {
            let v: serde_json::Value =
                serde_json::from_str(out.lines().rev().find(|l| !l.is_empty()).unwrap()).unwrap();
            v["data"]["id"].as_str().unwrap().to_string()
        };
        let first_note = note_id(&out);
        // The note call again, as the comment says: the same note, not a second.
        let note_call = calls
            .iter()
            .position(|l| l.contains("/v1/notes"))
            .map(|i| calls[i..].join("\n"))
            .unwrap();
        assert_eq!(note_id(&run_bash(cwd.path(), &env, &note_call)), first_note);
        // The second block works as it stands, too.
        let out = run_bash(cwd.path(), &env, &tour[1]);
        assert!(out.contains("\"next_cursor\""), "{out}");
    } else {
        eprintln!("bash, curl or jq is not installed: the tour's calls were not run");
    }

    // A restart on the same data: nothing is loaded or printed on standard output, and
    // standard error says how to make a key; that command works while the server runs.
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let log = data.path().join("second-start.log");
    let mut server = serve(Stdio::piped(), std::fs::File::create(&log).unwrap().into());
    let mut hint = None;
    for _ in 0..600 {
        let text = std::fs::read_to_string(&log).unwrap();
        if let Some(l) = text.lines().find(|l| l.contains(" key create ")) {
            hint = Some((text.clone(), l.trim().to_string()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (stderr, hint) = hint.expect("the restart says how to make a key");
    assert!(stderr.contains("already holds data"), "{stderr}");
    assert!(
        hint.contains(&format!("--workspace {workspace} --created-by {owner}")),
        "{hint}"
    );
    let bin = env!("CARGO_BIN_EXE_recruitd");
    let hint = hint.replacen("recruitd", bin, 1);
    let mut env = vec![(
        "RECRUITD_DATA_DIR",
        data.path().to_str().unwrap().to_string(),
    )];
    if let Backend::Postgres(url) = &b {
        env.push(("RECRUITD_DATABASE_URL", url.clone()));
    }
    let created = std::process::Command::new("bash")
        .arg("-c")
        .arg(&hint)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{hint}: {}",
        String::from_utf8_lossy(&created.stderr)
    );
    let secret = String::from_utf8_lossy(&created.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let client = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(
                &std::fs::read(data.path().join("tls/cert.pem")).unwrap(),
            )
            .unwrap(),
        )
        .build()
        .unwrap();
    let res = client
        .get(format!("https://127.0.0.1:{api_port}/v1/counts"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "the new key works at once");
    let mut rest = String::new();
    use tokio::io::AsyncReadExt;
    server.start_kill().unwrap();
    server
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut rest)
        .await
        .unwrap();
    assert!(!rest.contains("export KEY"), "no second demo key: {rest}");
}

store_test!(the_readme_tour_works_against_the_demo);
