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
-- the primary key is the only index needed. A rowid table rather than WITHOUT ROWID:
-- with bodies of ~500 bytes a WITHOUT ROWID b-tree imported 1,000,000 records in 46 s
-- against 18 s (it moves whole rows on every page split). Because bulk imports insert
-- in key order (`in_key_order`), a workspace's rows still lie in rowid order along its
-- index range, so loading one reads the table almost sequentially.
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
