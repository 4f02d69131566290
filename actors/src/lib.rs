//! # actors — the recruitd domain
//!
//! Records, their derivations, the per-workspace actor and its in-memory state, and the
//! Store port. No HTTP and no SQL live here: `src/` adapts this crate to the network and
//! to databases.
//!
//! ## Layout
//! - [`model`]: raw records of the snapshot format (what the store keeps), entity names,
//!   scopes and API keys.
//! - [`time`]: millisecond timestamps and calendar dates.
//! - [`phone`]: number normalisation (once, at write time).
//! - [`cow`]: the persistent containers under the state (copy-on-write chunks: a vector,
//!   an open-addressing map, a sorted order with small deltas).
//! - [`packed`]: records packed into one allocation each, with typed accessors (candidate
//!   rows, notes, attachments).
//! - [`table`]: a table of records of one kind: rows by number, an index by id, and the
//!   visible ones ordered by (`updated_at`, id) for keyset pagination.
//! - [`state`]: a workspace's in-memory state — a table per kind, secondary indexes.
//! - [`parents`]: the one-to-many indexes of the state: each parent record's notes and
//!   attachments, a person's rows, and the links derived changes follow.
//! - [`subresources`]: a record's (or a person's) newest children, for the sub-resource
//!   endpoints.
//! - [`entities`]: the one dispatch from an entity to its table and view.
//! - [`views`]: the API's records derived from raw records (`status`,
//!   `owning_recruiter_id`, `live`/`published`, …), serialised without copying.
//! - [`rendered`]: the JSON writer the views use to write records into answers.
//! - [`query`]: `limit`, `updated_since` and cursor parsing.
//! - [`snapshot`]: parsing and whole-file validation of `recruit-snapshot/1`, the plan
//!   of changes an import makes, and applying it (blobs, store, key ring).
//! - [`store`]: the Store trait, change sets, an in-memory store for tests; the BlobStore
//!   trait and object naming.
//! - [`entries`]: the change log's entries (a record of an entity that changed) and the
//!   bytes a log part stores them as; the store writes and reads them.
//! - [`changes`]: the change log every commit writes beside its records: the changes a
//!   commit derives from the states before and after it, feed tokens, and reading the
//!   log into answers of `GET /v1/changes`.
//! - [`tombstones`]: records that left what the API shows, for `include_deleted` lists.
//! - [`reclaim`]: the sweep at load that collects the blobs a crash left behind.
//! - [`env`](mod@env): what an actor works with (store, blobs, key ring, settings, the observer of
//!   commits), built once at start-up.
//! - [`actor`]: the workspace actor, the only writer of a workspace's state.
//! - [`registry`]: the directory of workspaces: id → actor and published read view.
//! - [`loader`]: loading the workspaces at start, with retries and their failures; how
//!   a batch of states is read from the store.
//! - [`memory`]: handing memory freed by a load back to the system.
//! - [`checkpoint`]: a workspace's state in a local file, labelled with the store's
//!   commit position, so that a restart reads one file rather than every record; and the
//!   keeper that writes them in the background and at shutdown.
//! - [`keys`]: the API key ring, and the key service that creates and revokes keys.
//! - [`search`]: phone and e-mail indexes (fst base + delta) and the matching rules.
//! - [`writes`]: API writes (notes, tasks, record edits) checked and planned against a
//!   workspace state.
//!
//! ## Concurrency model
//! - Each workspace has one [`actor::WorkspaceActor`]. It alone builds new states; it
//!   processes one write at a time, commits it to the store, and only then publishes the
//!   new state (an `Arc` swapped into an `ArcSwap`).
//! - Readers (HTTP handlers) load the current `Arc<WorkspaceState>` and read it without
//!   any lock; a reader keeps one consistent state for its whole request.
//! - The key ring is a concurrent map read on every request; it is written after a store
//!   commit only, by the key service and by imports.
//! - Nothing but a workspace's actor and the key service commits to the store.
//! - No lock is ever held across an `.await`, and the read path takes none.

pub mod actor;
pub mod changes;
pub mod checkpoint;
pub mod cow;
pub mod entities;
pub mod entries;
pub mod env;
pub mod follow;
pub mod keys;
pub mod loader;
pub mod memory;
pub mod model;
pub mod packed;
pub mod parents;
pub mod phone;
pub mod private_files;
pub mod query;
pub mod reclaim;
pub mod registry;
pub mod rendered;
pub mod search;
pub mod signing;
pub mod snapshot;
pub mod state;
pub mod store;
pub mod subresources;
pub mod table;
pub mod time;
pub mod tombstones;
pub mod writes;
