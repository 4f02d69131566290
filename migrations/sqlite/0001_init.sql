-- recruitd store, SQLite. The domain validates references, so there are no foreign
-- keys; the CHECKs below are last-resort guards against nonsense ids.

-- One row per workspace: the `Workspace` description.
CREATE TABLE workspaces (
    id             TEXT PRIMARY KEY NOT NULL,
    name           TEXT,
    default_region TEXT
);

-- Every raw record of every workspace: `kind` is `RecordKind::as_str()`, `body` is
-- `Record::to_json()`. Reads are whole-workspace loads and writes are keyed upserts, so
-- the primary key is the only index needed.
--
-- A rowid table rather than WITHOUT ROWID: rows are large (hundreds of bytes, kilobytes
-- for notes with long HTML), which SQLite advises against for WITHOUT ROWID, and the
-- measurements did not favour it either (1,000,000 records of ~520 bytes: 9.3 s against
-- 10.0 s when written in key order, 46 s against 18 s in arbitrary order). Because bulk imports
-- insert in key order (`in_key_order`), a workspace's rows lie in rowid order along its
-- primary-key range, so loading a workspace reads the table almost sequentially.
CREATE TABLE records (
    workspace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    id           TEXT NOT NULL CHECK (id <> ''),
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, kind, id)
);

-- API keys of every workspace. Only the SHA-256 of the secret is kept, never the secret.
CREATE TABLE api_keys (
    id                    TEXT PRIMARY KEY NOT NULL CHECK (id <> ''),
    workspace_id          TEXT NOT NULL,
    secret_hash           BLOB NOT NULL CHECK (length(secret_hash) = 32),
    scopes                TEXT NOT NULL,    -- `Scopes::to_csv`
    created_by            TEXT NOT NULL,    -- user id
    revoked               BOOLEAN NOT NULL DEFAULT FALSE,
    rate_limit_per_minute INTEGER,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
