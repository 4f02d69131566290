-- recruitd store, PostgreSQL. The domain validates references, so there are no foreign
-- keys; the CHECKs below are last-resort guards against nonsense ids.
--
-- Key columns use COLLATE "C": ids are compared for equality only, and byte order makes
-- every primary-key comparison a memcmp instead of a locale-aware strcoll (measurably
-- faster on bulk imports, whatever the database's default collation).

-- One row per workspace: the `Workspace` description.
CREATE TABLE workspaces (
    id             TEXT COLLATE "C" PRIMARY KEY,
    name           TEXT,
    default_region TEXT
);

-- Every raw record of every workspace: `kind` is `RecordKind::as_str()`, `body` is
-- `Record::to_json()`.
--
-- body is TEXT, not JSONB: TEXT imports faster (measured, see src/store/postgres.rs)
-- and accepts every string serde_json writes, whereas JSONB rejects the escape \u0000
-- that a record's free text may legitimately contain. Operators who want to query
-- bodies can still cast: body::jsonb.
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
