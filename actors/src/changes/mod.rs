//! The change log behind `GET /v1/changes`: which records each commit changed.
//!
//! Every store transaction that moves a workspace's commit position writes, in that
//! transaction, the records it changed as log parts: `(position, part)` rows of at most
//! [`crate::entries::ENTRIES_PER_PART`] entries each, an entry naming one record of one entity. The
//! position is the workspace's commit counter, bumped in the same transaction, so the
//! log is gap-free and in commit order per workspace, across restarts (and across nodes
//! sharing the store). A reader that has applied up to a position fetches the parts
//! after it with one indexed range read.
//!
//! An entry says only *that* a record changed, not how: the feed shows each record as
//! it stands at the answer's point, an upsert when the API shows it then and a tombstone
//! when it does not (deleted, private, removed user, application of a deleted job). So a
//! log that names a record more often than needed costs a duplicate, never a wrong
//! answer; one that misses a record would. Hence the entries are made where nothing can
//! be missed:
//! - the store writes the direct ones itself, from the very upserts and deletes of each
//!   transaction ([`crate::entries::encode_parts`]): a candidate row names its candidate and, on a job,
//!   its application; a deleted one both;
//! - the actors add the derived ones ([`derive::derived`]): records whose API representation
//!   changed because another record did (a company's name on its contacts and jobs, a
//!   user's activity on the `owning_recruiter_id` of candidate rows, a stage on the rows
//!   at it, a job on its applications, a contact's company on its notes, a candidate
//!   row's stamps on its CVs).
//!
//! The parts, from the bottom up (the entries themselves, which the store writes and reads,
//! are [`crate::entries`], below the store port):
//! - [`derive`]: what a commit changed besides what it wrote (derived changes) and the
//!   tombstones it sets and clears, worked out from the states before and after it;
//! - [`tokens`]: the signed point a feed token carries;
//! - `parts`: the log's parts decoded, the ones read last and each workspace's newest
//!   (its tail, read once for every follower a commit wakes);
//! - [`feed`]: reading the log into an answer of `GET /v1/changes`.

pub mod derive;
pub mod feed;
mod parts;
pub mod tokens;

/// `--changes-retention-days`' default: the history a client may fall behind by.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// How often retention prunes each workspace's log.
pub const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
