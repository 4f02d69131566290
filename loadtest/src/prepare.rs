//! `prepare`: puts a workspace into a running server through its operator surface only
//! (see `docs/operations.md`): `recruitd generate` writes a synthetic snapshot, the admin
//! interface imports it (`POST /admin/v1/import`) and creates a key with every scope and
//! a per-minute budget far above any benchmark rate (`POST /admin/v1/keys`), written to
//! a file the scenarios read.
//!
//! Each size (people and seed) gets a workspace of its own (`workspace_id`), so that a
//! second `prepare` of another size on the same server gives a workspace of exactly that
//! size, rather than updating part of the first one; the first stays in the server
//! (restart it on a fresh data dir to drop it), and the new key reaches the new one.

use crate::cli::{self, Common, PrepareArgs};
use anyhow::{bail, Context};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The `recruitd` binary: as given, else the one built next to this binary (the same
/// cargo target directory), else from PATH.
pub fn recruitd_binary(given: Option<&Path>) -> PathBuf {
    if let Some(p) = given {
        return p.to_path_buf();
    }
    if let Ok(me) = std::env::current_exe() {
        if let Some(dir) = me.parent() {
            let sibling = dir.join(format!("recruitd{}", std::env::consts::EXE_SUFFIX));
            if sibling.is_file() {
                return sibling;
            }
        }
    }
    PathBuf::from("recruitd")
}

#[derive(Deserialize)]
struct SnapshotHead {
    workspace: WorkspaceHead,
    #[serde(default)]
    users: Vec<UserHead>,
}

#[derive(Deserialize)]
struct WorkspaceHead {
    id: String,
}

#[derive(Deserialize)]
struct UserHead {
    email: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    status: String,
}

pub(crate) async fn admin_ready(
    http: &reqwest::Client,
    base: &str,
    token: &str,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = http
            .get(format!("{base}/admin/v1/ready"))
            .bearer_auth(token)
            .send()
            .await;
        match r {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => {
                bail!("the admin interface at {base} refused the admin token")
            }
            Err(e) if e.is_connect() => bail!(
                "no recruitd answers at {base}: start the server first (e.g. `recruitd \
                 --data-dir bench serve`), then prepare; --admin-url names its admin \
                 interface (default http://127.0.0.1:8444)"
            ),
            _ if Instant::now() > deadline => {
                bail!("the server at {base} did not become ready within 120 s")
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The workspace id of a prepared size: one per (people, seed), always the same for it.
pub fn workspace_id(people: usize, seed: u64) -> String {
    // SplitMix64 over both numbers: well spread, and no hashing crate needed.
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let hi = mix(people as u64 ^ mix(seed));
    let lo = mix(hi ^ 0x6c6f_6164_7465_7374);
    // A version-4 layout (random-looking), as the generator's own ids are.
    let hi = (hi & !0xf000) | 0x4000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// What was prepared last on a data dir (`loadtest.workspace`).
#[derive(serde::Serialize, Deserialize)]
struct Prepared {
    workspace_id: String,
    people: usize,
    seed: u64,
}

pub async fn run(common: &Common, a: &PrepareArgs) -> anyhow::Result<()> {
    let data_dir = cli::data_dir(common)?;
    let token = match (&a.admin_token, &data_dir) {
        (Some(t), _) => t.clone(),
        (None, Some(d)) => std::fs::read_to_string(d.join("admin-token"))
            .with_context(|| format!("reading {}", d.join("admin-token").display()))?
            .trim()
            .to_string(),
        (None, None) => bail!("give --admin-token or --data-dir (which holds admin-token)"),
    };
    // The snapshot is kept next to the server's data (it is large, and reused).
    let work_dir = data_dir
        .clone()
        .or_else(|| common.out.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&work_dir)?;
    let wanted = workspace_id(a.people, a.gen_seed);
    let snapshot = match &a.snapshot {
        Some(s) => s.clone(),
        None => {
            let path = work_dir.join(format!("workspace-{}-seed{}.json", a.people, a.gen_seed));
            if path.exists() && snapshot_workspace(&path).as_deref() == Some(wanted.as_str()) {
                eprintln!("reusing {}", path.display());
            } else {
                let bin = recruitd_binary(a.recruitd.as_deref());
                eprintln!("generating {} people with {}", a.people, bin.display());
                generate(&bin, a.people, a.gen_seed, &wanted, &path)?;
            }
            path
        }
    };
    let bytes =
        std::fs::read(&snapshot).with_context(|| format!("reading {}", snapshot.display()))?;
    let head: SnapshotHead = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a snapshot", snapshot.display()))?;
    let owner = head
        .users
        .iter()
        .find(|u| u.status == "active" && u.role == "owner")
        .or_else(|| head.users.iter().find(|u| u.status == "active"))
        .context("the snapshot has no active user to create the key")?
        .email
        .clone();

    let base = a.admin_url.trim_end_matches('/').to_string();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3600))
        .build()?;
    admin_ready(&http, &base, &token).await?;
    let started = Instant::now();
    let imported = import(&http, &base, &token, bytes).await?;
    eprintln!(
        "imported {} in {:.1} s: {}",
        snapshot.display(),
        started.elapsed().as_secs_f64(),
        imported["data"]["upserted"]
    );
    let scopes = [
        "read",
        "notes:write",
        "tasks:write",
        "records:write",
        "webhooks:write",
    ];
    let secret = create_key(
        &http,
        &base,
        &token,
        &head.workspace.id,
        &owner,
        &scopes,
        a.rate_limit_per_minute,
    )
    .await?;
    let key_path = a
        .write_key
        .clone()
        .or_else(|| data_dir.as_ref().map(|d| d.join("loadtest.key")))
        .unwrap_or_else(|| work_dir.join("loadtest.key"));
    write_secret(&key_path, &secret)?;
    let record = key_path.with_extension("workspace");
    let before: Option<Prepared> = std::fs::read(&record)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    if let Some(b) = before.filter(|b| b.workspace_id != head.workspace.id) {
        eprintln!(
            "note: the server still holds the workspace of an earlier prepare ({} people, seed \
             {}, {}); the key now reaches this one. Restart the server on a fresh data dir to \
             benchmark this workspace alone.",
            b.people, b.seed, b.workspace_id
        );
    }
    let prepared = Prepared {
        workspace_id: head.workspace.id.clone(),
        people: a.people,
        seed: a.gen_seed,
    };
    std::fs::write(&record, serde_json::to_vec(&prepared)?)?;
    println!("workspace {}", head.workspace.id);
    println!("key file {}", key_path.display());
    Ok(())
}

/// Writes a generated snapshot of `people` people to `path` with the `recruitd` binary
/// `bin`: `seed`'s workspace, under the id `workspace`.
pub(crate) fn generate(
    bin: &Path,
    people: usize,
    seed: u64,
    workspace: &str,
    path: &Path,
) -> anyhow::Result<()> {
    let status = std::process::Command::new(bin)
        .args(["generate", "--people", &people.to_string()])
        .args(["--seed", &seed.to_string()])
        .args(["--workspace-id", workspace])
        .arg("--out")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    if !status.success() {
        let _ = std::fs::remove_file(path);
        bail!("{} generate failed: {status}", bin.display());
    }
    Ok(())
}

/// Imports a snapshot through the admin interface at `base`; its answer's JSON.
pub(crate) async fn import(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    snapshot: impl Into<reqwest::Body>,
) -> anyhow::Result<serde_json::Value> {
    let r = http
        .post(format!("{base}/admin/v1/import"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(snapshot)
        .send()
        .await
        .context("importing the snapshot")?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    if !status.is_success() {
        bail!("import refused: HTTP {status} {body}");
    }
    Ok(body)
}

/// Creates a key of `workspace` through the admin interface at `base`, as the user of
/// e-mail `creator`; its secret.
pub(crate) async fn create_key(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    workspace: &str,
    creator: &str,
    scopes: &[&str],
    rate_limit_per_minute: u32,
) -> anyhow::Result<String> {
    let r = http
        .post(format!("{base}/admin/v1/keys"))
        .bearer_auth(token)
        .json(&serde_json::json!({
            "workspace_id": workspace,
            "created_by_email": creator,
            "scopes": scopes,
            "rate_limit_per_minute": rate_limit_per_minute,
        }))
        .send()
        .await
        .context("creating a key")?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    match body["data"]["secret"].as_str() {
        Some(secret) => Ok(secret.to_string()),
        None => bail!("key creation refused: HTTP {status} {body}"),
    }
}

/// The workspace id a snapshot file names, read from its beginning.
fn snapshot_workspace(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let after = text.split("\"workspace\":").nth(1)?;
    let id = after.split("\"id\":\"").nth(1)?.split('"').next()?;
    Some(id.to_string())
}

fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(f, "{secret}")?;
    Ok(())
}
