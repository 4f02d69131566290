//! `write`: what a call-centre integration writes. Notes (on candidates, contacts,
//! companies and jobs) and tasks, each with an idempotency `reference`; a share of note
//! creations repeat an earlier reference, which must answer 200 with the first id; and
//! PATCHes of notes, task status and candidates' job title.
//!
//! Checked: the status the API documents (201 for a new note or task, 200 for a repeat
//! and for a PATCH), the id, and that a PATCH answer shows the value sent. When another
//! write of this run to the same record (for candidates: the same person, whose
//! records move together) overlapped it, the answer may show that write's value
//! instead (writes are committed in groups and answered as the record then stands), so
//! it must show a value one of them sent. Nothing the
//! lookups check is changed (no number or address is edited), so `mixed` can verify
//! lookups while writing.

use super::changes::Ack;
use super::judge;
use crate::data::Dataset;
use crate::driver::Workload;
use crate::http::Pool;
use crate::stats::Recorder;
use bytes::Bytes;
use hyper::Method;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Created ids kept as targets of later PATCHes (most recent ones).
const KEEP: usize = 10_000;

/// Writes in flight per record, to tell when two overlapped.
#[derive(Default)]
struct Overlaps(Mutex<HashMap<String, (u32, u64)>>);

/// A write's place among the writes to its record.
struct Turn {
    key: String,
    started: u64,
    overlapped: bool,
}

impl Overlaps {
    fn begin(&self, key: String) -> Turn {
        let mut m = self.0.lock().expect("lock");
        let e = m.entry(key.clone()).or_default();
        e.0 += 1;
        e.1 += 1;
        Turn {
            overlapped: e.0 > 1,
            started: e.1,
            key,
        }
    }

    /// Whether another write to the record ran at any time during this one.
    fn end(&self, t: Turn) -> bool {
        let mut m = self.0.lock().expect("lock");
        let e = m.get_mut(&t.key).expect("begun");
        let overlapped = t.overlapped || e.1 != t.started;
        e.0 -= 1;
        if e.0 == 0 {
            m.remove(&t.key);
        }
        overlapped
    }
}

#[derive(Default)]
struct Created {
    notes: Vec<String>,
    tasks: Vec<String>,
    /// Created notes (reference, id, parent type, parent id), for retries.
    references: Vec<(String, String, &'static str, String)>,
}

fn keep(v: &mut Vec<String>, id: String) {
    if v.len() >= KEEP {
        v.drain(..KEEP / 2);
    }
    v.push(id);
}

pub struct WriteLoad {
    pub pool: Arc<Pool>,
    pub rec: Arc<Recorder>,
    pub ds: Arc<Dataset>,
    pub seed: u64,
    /// (kind, cumulative weight).
    mix: Vec<(String, u32)>,
    created: Mutex<Created>,
    overlaps: Overlaps,
    /// Distinguishes references of separate runs against one server.
    run_id: u64,
    /// Each acknowledged write's record, when a feed follower matches them to its
    /// deliveries (`sync --mode changes`).
    acks: Option<Mutex<Vec<Ack>>>,
}

/// When a write left, to match it with its delivery in the feed.
struct Sent {
    at: Instant,
    wall: Option<String>,
}

impl WriteLoad {
    pub fn new(
        pool: Arc<Pool>,
        rec: Arc<Recorder>,
        ds: Arc<Dataset>,
        seed: u64,
        mix: &BTreeMap<String, u32>,
    ) -> anyhow::Result<Self> {
        if ds.candidate_rows.is_empty() {
            anyhow::bail!("the workspace has no candidates to write notes on");
        }
        let mut acc = 0;
        let mix = mix
            .iter()
            .filter(|(_, w)| **w > 0)
            .map(|(k, w)| {
                acc += w;
                (k.clone(), acc)
            })
            .collect();
        let run_id = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Ok(WriteLoad {
            pool,
            rec,
            ds,
            seed,
            mix,
            created: Mutex::new(Created::default()),
            overlaps: Overlaps::default(),
            run_id,
            acks: None,
        })
    }

    /// Keeps every acknowledged write's record and `updated_at` for [`Self::take_acks`].
    pub fn keeping_acks(mut self) -> Self {
        self.acks = Some(Mutex::new(Vec::new()));
        self
    }

    pub fn take_acks(&self) -> Vec<Ack> {
        self.acks
            .as_ref()
            .map(|a| std::mem::take(&mut *a.lock().expect("lock")))
            .unwrap_or_default()
    }

    /// Notes an acknowledged write (an answer of status `want`) of an `entity` record.
    fn acked(
        &self,
        entity: &'static str,
        r: &Result<crate::http::Answer, crate::http::Failure>,
        want: u16,
        sent: Sent,
    ) {
        let (Some(acks), Ok(a), Some(wall)) = (&self.acks, r, sent.wall) else {
            return;
        };
        if a.status != want {
            return;
        }
        let Ok(v) = a.json() else { return };
        let Some(id) = v["data"]["id"].as_str() else {
            return;
        };
        let (updated_at, sent_wall) = match v["data"]["updated_at"].as_str() {
            Some(u) => (u.to_string(), wall),
            // A new note is answered with its id alone: any delivery of that id shows it
            // (none can come before it).
            None if a.status == 201 => (String::new(), String::new()),
            // A repeated reference answered with the id alone may have changed nothing.
            None => return,
        };
        acks.lock().expect("lock").push(Ack {
            entity,
            id: id.to_string(),
            updated_at,
            sent_wall,
            sent: sent.at,
        });
    }

    fn kind(&self, rng: &mut SmallRng) -> &str {
        let total = self.mix.last().map_or(1, |m| m.1);
        let r = rng.gen_range(0..total);
        &self.mix.iter().find(|(_, c)| r < *c).expect("weights").0
    }

    /// A random record to hang a note or task on.
    fn parent(&self, rng: &mut SmallRng, with_jobs: bool) -> (&'static str, String) {
        let ds = &self.ds;
        let mut kinds: Vec<(&'static str, &Vec<String>)> = vec![("candidate", &ds.candidate_rows)];
        if !ds.contacts.is_empty() {
            kinds.push(("contact", &ds.contacts));
        }
        if !ds.companies.is_empty() {
            kinds.push(("company", &ds.companies));
        }
        if with_jobs && !ds.jobs.is_empty() {
            kinds.push(("job", &ds.jobs));
        }
        let (t, ids) = *kinds.choose(rng).expect("candidates exist");
        (t, ids.choose(rng).expect("non-empty").clone())
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: serde_json::Value,
    ) -> (
        Result<crate::http::Answer, crate::http::Failure>,
        Sent,
        Instant,
    ) {
        let bytes = Bytes::from(serde_json::to_vec(&body).expect("JSON"));
        let sent = Sent {
            wall: self.acks.is_some().then(super::changes::wall_now),
            at: Instant::now(),
        };
        let r = self.pool.send(method, path, Some(bytes)).await;
        (r, sent, Instant::now())
    }

    async fn create_note(&self, rng: &mut SmallRng, seq: u64, intended: Instant) {
        let repeat = {
            let c = self.created.lock().expect("lock");
            (rng.gen_bool(0.1) && !c.references.is_empty())
                .then(|| c.references.choose(rng).cloned())
                .flatten()
        };
        // A repeat is a client's retry: the same request, the same reference.
        let (reference, endpoint, want, want_id, (parent_type, parent_id)) = match repeat {
            Some((r, id, pt, pid)) => (
                r,
                "POST /v1/notes (repeated reference)",
                200,
                Some(id),
                (pt, pid),
            ),
            None => (
                format!("loadtest-{}-{seq}", self.run_id),
                "POST /v1/notes",
                201,
                None,
                self.parent(rng, true),
            ),
        };
        let mut body = json!({
            "parent_type": parent_type,
            "parent_id": &parent_id,
            "title": "Call",
            "type": "call",
            "body_html": format!("<p>Spoke about the role; call back next week ({seq}).</p>"),
            "is_private": false,
            "reference": &reference,
        });
        if let Some(author) = self.ds.active_user_emails.choose(rng) {
            body["author_email"] = json!(author);
        }
        // A retry rewrites its note: it counts as a write to that note.
        let turn = want_id
            .as_ref()
            .map(|id| self.overlaps.begin(format!("note:{id}")));
        let (r, sent, done) = self.send(Method::POST, "/v1/notes", body).await;
        if let Some(t) = turn {
            self.overlaps.end(t);
        }
        self.acked("notes", &r, want, sent);
        let mut new_id = None;
        let verdict = judge(r, want, |a| {
            let id = match a.json() {
                Ok(v) => v["data"]["id"].as_str().map(str::to_string),
                Err(e) => return Some(format!("undecodable answer: {e}")),
            };
            match (&id, &want_id) {
                (None, _) => Some("no data.id".into()),
                (Some(got), Some(first)) if got != first => Some(format!(
                    "repeated reference {reference} gave id {got}, first {first}"
                )),
                _ => {
                    new_id = id;
                    None
                }
            }
        });
        if want_id.is_none() {
            if let Some(id) = new_id {
                let mut c = self.created.lock().expect("lock");
                if c.references.len() >= KEEP {
                    c.references.drain(..KEEP / 2);
                }
                c.references
                    .push((reference, id.clone(), parent_type, parent_id));
                keep(&mut c.notes, id);
            }
        }
        self.rec.record(endpoint, intended, done, verdict, 0);
    }

    async fn create_task(&self, rng: &mut SmallRng, seq: u64, intended: Instant) {
        let (parent_type, parent_id) = self.parent(rng, false);
        let body = json!({
            "parent_type": parent_type,
            "parent_id": parent_id,
            "title": "Follow up the call",
            "body_html": "<p>Send the job description.</p>",
            "due_date": format!("2027-0{}-1{}", rng.gen_range(1..10), rng.gen_range(0..10)),
            "is_private": false,
            "reference": format!("loadtest-task-{}-{seq}", self.run_id),
        });
        let (r, sent, done) = self.send(Method::POST, "/v1/tasks", body).await;
        self.acked("tasks", &r, 201, sent);
        let mut new_id = None;
        let verdict = judge(r, 201, |a| {
            new_id = match a.json() {
                Ok(v) => v["data"]["id"].as_str().map(str::to_string),
                Err(e) => return Some(format!("undecodable answer: {e}")),
            };
            new_id.is_none().then(|| "no data.id".to_string())
        });
        if let Some(id) = new_id {
            keep(&mut self.created.lock().expect("lock").tasks, id);
        }
        self.rec
            .record("POST /v1/tasks", intended, done, verdict, 0);
    }

    async fn patch_note(&self, rng: &mut SmallRng, seq: u64, intended: Instant) {
        let id = self
            .created
            .lock()
            .expect("lock")
            .notes
            .choose(rng)
            .cloned();
        let Some(id) = id else {
            return self.create_note(rng, seq, intended).await;
        };
        let html = format!("<p>Edited after the call ({seq}).</p>");
        let turn = self.overlaps.begin(format!("note:{id}"));
        let (r, sent, done) = self
            .send(
                Method::PATCH,
                &format!("/v1/notes/{id}"),
                json!({ "body_html": &html }),
            )
            .await;
        self.acked("notes", &r, 200, sent);
        let overlapped = self.overlaps.end(turn);
        let verdict = judge(r, 200, |a| {
            let v = match a.json() {
                Ok(v) => v,
                Err(e) => return Some(format!("undecodable answer: {e}")),
            };
            let shown = v["data"]["body_html"].as_str().unwrap_or_default();
            let ours = shown.starts_with("<p>Edited after the call (")
                || shown.starts_with("<p>Spoke about the role;");
            (shown != html && !(overlapped && ours)).then(|| {
                format!("note {id}: PATCH answer shows body_html {shown:?}, not the one sent")
            })
        });
        self.rec
            .record("PATCH /v1/notes/{id}", intended, done, verdict, 0);
    }

    async fn patch_task(&self, rng: &mut SmallRng, seq: u64, intended: Instant) {
        let id = self
            .created
            .lock()
            .expect("lock")
            .tasks
            .choose(rng)
            .cloned();
        let Some(id) = id else {
            return self.create_task(rng, seq, intended).await;
        };
        let status = if rng.gen_bool(0.7) {
            "completed"
        } else {
            "open"
        };
        let turn = self.overlaps.begin(format!("task:{id}"));
        let (r, sent, done) = self
            .send(
                Method::PATCH,
                &format!("/v1/tasks/{id}"),
                json!({ "status": status }),
            )
            .await;
        self.acked("tasks", &r, 200, sent);
        let overlapped = self.overlaps.end(turn);
        let verdict = judge(r, 200, |a| {
            let v = match a.json() {
                Ok(v) => v,
                Err(e) => return Some(format!("undecodable answer: {e}")),
            };
            let shown = &v["data"]["status"];
            let ours = shown == "open" || shown == "completed";
            (*shown != json!(status) && !(overlapped && ours)).then(|| {
                format!(
                    "task {id}: PATCH status {status} answered {}",
                    v["data"]["status"]
                )
            })
        });
        self.rec
            .record("PATCH /v1/tasks/{id}", intended, done, verdict, 0);
    }

    async fn patch_candidate(&self, rng: &mut SmallRng, seq: u64, intended: Instant) {
        let row = rng.gen_range(0..self.ds.candidate_rows.len());
        let id = &self.ds.candidate_rows[row];
        let title = format!("Senior engineer {}", seq % 1000);
        // A person's records share their job title: the person is the record here.
        let turn = self
            .overlaps
            .begin(format!("person:{}", self.ds.row_person[row]));
        let (r, sent, done) = self
            .send(
                Method::PATCH,
                &format!("/v1/candidates/{id}"),
                json!({ "job_title": &title }),
            )
            .await;
        self.acked("candidates", &r, 200, sent);
        let overlapped = self.overlaps.end(turn);
        let verdict = judge(r, 200, |a| {
            let v = match a.json() {
                Ok(v) => v,
                Err(e) => return Some(format!("undecodable answer: {e}")),
            };
            let shown = v["data"]["job_title"].as_str().unwrap_or_default();
            let ours = shown.starts_with("Senior engineer ");
            (shown != title && !(overlapped && ours)).then(|| {
                format!("candidate {id}: PATCH answer shows job_title {shown:?}, not the one sent")
            })
        });
        self.rec
            .record("PATCH /v1/candidates/{id}", intended, done, verdict, 0);
    }
}

impl Workload for WriteLoad {
    async fn warm(self: Arc<Self>, share: usize) {
        if let Err(e) = self.pool.warm(share).await {
            eprintln!("opening connections: {e:#}");
        }
    }

    async fn op(self: Arc<Self>, seq: u64, intended: Instant) {
        let mut rng = SmallRng::seed_from_u64(self.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        match self.kind(&mut rng) {
            "notes" => self.create_note(&mut rng, seq, intended).await,
            "tasks" => self.create_task(&mut rng, seq, intended).await,
            "note_patches" => self.patch_note(&mut rng, seq, intended).await,
            "task_patches" => self.patch_task(&mut rng, seq, intended).await,
            _ => self.patch_candidate(&mut rng, seq, intended).await,
        }
    }
}
