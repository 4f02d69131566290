-- Attachment bytes, by workspace and object name (the SHA-256 of the attachment id in
-- hex, as `actors::store::object_key` names objects). Kept in the store rather than as
-- one file each: a million-person import carries close to a million small files, whose
-- creation cost more than all its records; and the bytes are then as durable, and as
-- reachable, as the records that name them. A rowid table: values run from bytes to
-- megabytes, which SQLite keeps better outside a WITHOUT ROWID b-tree.
CREATE TABLE blobs (
    workspace_id TEXT NOT NULL,
    name         TEXT NOT NULL,
    bytes        BLOB NOT NULL,
    UNIQUE (workspace_id, name)
);
