-- recruitd store, PostgreSQL. The domain validates references, so there are no foreign
-- keys; the CHECKs below are last-resort guards against nonsense ids.
--
-- Key columns use COLLATE "C": ids are only ever compared for equality and order of
-- bytes, and byte order makes every primary-key comparison a memcmp instead of a
-- locale-aware strcoll. Measured (PostgreSQL 15, 1,000,000 records of ~480 bytes,
-- INSERT … ON CONFLICT DO UPDATE from a staged table): 15.1 s with "C", 21.2 s with the
-- database default (C.UTF-8). Byte order is also the order the adapter writes in
-- (`in_key_order`) and the order of Rust's `String` (`keys()` sorts by id).

-- One row per workspace: the `Workspace` description.
CREATE TABLE workspaces (
    id             TEXT COLLATE "C" PRIMARY KEY,
    name           TEXT,
    default_region TEXT
);

-- Every raw record of every workspace: `kind` is `RecordKind::as_str()`, `body` is
-- `Record::to_json()`.
--
-- body is TEXT, not JSONB. TEXT imports faster (same measurement as above: 15.1 s as
-- TEXT, 22.4 s as JSONB, which parses and re-encodes every body; reading it back as
-- text also takes twice as long) and stores every string serde_json writes, whereas
-- JSONB rejects the escape \u0000 that a record's free text may legitimately contain.
-- Operators who want to query bodies can still cast: body::jsonb ->> 'email'.
CREATE TABLE records (
    workspace_id TEXT COLLATE "C" NOT NULL,
    kind         TEXT COLLATE "C" NOT NULL,
    id           TEXT COLLATE "C" NOT NULL CHECK (id <> ''),
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, kind, id)
);

-- API keys of every workspace. Only the SHA-256 of the secret is kept, never the secret.
CREATE TABLE api_keys (
    id                    TEXT COLLATE "C" PRIMARY KEY CHECK (id <> ''),
    workspace_id          TEXT NOT NULL,
    secret_hash           BYTEA NOT NULL CHECK (octet_length(secret_hash) = 32),
    scopes                TEXT NOT NULL,    -- `Scopes::to_csv`
    created_by            TEXT NOT NULL,    -- user id
    revoked               BOOLEAN NOT NULL DEFAULT FALSE,
    -- BIGINT: the domain's limit is a u32, which does not fit PostgreSQL's INTEGER.
    rate_limit_per_minute BIGINT,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);
