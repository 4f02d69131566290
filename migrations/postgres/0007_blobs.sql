-- Attachment bytes, by workspace and object name (the SHA-256 of the attachment id in
-- hex, as `actors::store::object_key` names objects). Kept in the store rather than as
-- one file each in a node's data dir: every node of a cluster reaches them, and a
-- million-person import no longer creates close to a million small files (which cost
-- more than all its records).
CREATE TABLE blobs (
    workspace_id TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    bytes        BYTEA NOT NULL,
    PRIMARY KEY (workspace_id, name)
);
