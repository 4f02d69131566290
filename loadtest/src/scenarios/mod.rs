//! The workloads: what each scenario sends, and how every answer is judged.
//!
//! - [`lookup`]: phone and e-mail searches from a pre-computed bank of queries with
//!   their expected answers.
//! - [`sync`]: full syncs of every entity page by page, counted against `/v1/counts`
//!   and `total_count`, then incremental syncs from each entity's watermark.
//! - [`write`]: note and task creation (with idempotency references, some repeated),
//!   PATCHes of notes, tasks and candidates.
//! - [`mixed`]: the three together, each at its own open-loop rate.
//! - [`sync_clients`]: full-sync clients as processes of their own, beside a lookup run
//!   (`lookup --sync-clients`).
//! - [`changes`]: a client following `GET /v1/changes` (catch-up, and long-poll while
//!   `write` runs), every delivery matched to its write and checked against GET.
//! - [`webhooks`]: the feed pushed to a receiver of the load generator's.
//! - [`fanout`]: many followers long-polling the feeds of many workspaces while writes
//!   commit across them, every write matched to every follower of its workspace.
//!
//! Lookups and syncs run against a [`Backend`]: recruitd over HTTPS, or the PostgreSQL
//! baseline.

pub mod changes;
pub mod fanout;
pub mod lookup;
pub mod mixed;
pub mod sync;
pub mod sync_clients;
pub mod webhooks;
pub mod write;

/// Every how many answers (list pages, feed answers) one is parsed as JSON whole and
/// must agree with what the scan of it found.
pub(crate) const PARSE_EVERY: u64 = 32;

/// What follows the data of an answer the scanners read (`],` and then members to the
/// closing brace), as `T`: parsed as an object of its own.
pub(crate) fn parse_tail<T: serde::de::DeserializeOwned>(rest: &[u8]) -> Option<T> {
    let mut object = Vec::with_capacity(rest.len() + 1);
    object.push(b'{');
    object.extend_from_slice(rest);
    serde_json::from_slice(&object).ok()
}

use crate::baseline::Pg;
use crate::http::{Answer, Failure, Pool};
use crate::stats::Verdict;
use std::sync::Arc;

#[derive(Clone)]
pub enum Backend {
    Api(Arc<Pool>),
    Pg(Arc<Pg>),
}

impl Backend {
    pub fn system(&self) -> &'static str {
        match self {
            Backend::Api(_) => "recruitd",
            Backend::Pg(_) => "postgresql",
        }
    }
}

/// The verdict on an HTTP exchange that must answer `want`, with `content` judging the
/// body of such an answer (`Some(why)` when it is wrong).
pub fn judge(
    result: Result<Answer, Failure>,
    want: u16,
    content: impl FnOnce(&Answer) -> Option<String>,
) -> Verdict {
    match result {
        Ok(a) if a.status == want => match content(&a) {
            None => Verdict::Ok,
            Some(why) => Verdict::Mismatch(why),
        },
        Ok(a) => Verdict::Status(a.status, a.error_code()),
        Err(f) => Verdict::Failed(f.label(), f.to_string()),
    }
}
