-- The change log behind GET /v1/changes: per workspace, which records each transaction
-- changed, written in that transaction at the commit position it moved to (`position`,
-- from commit_positions, whose row lock orders the workspace's committers), so the log
-- is gap-free and in commit order. A transaction's entries are cut into parts of a few
-- thousand (`part` 0, 1, …); `entries` holds them in the encoding of `actors::changes`.
-- `committed_at` (milliseconds since the epoch) is what retention prunes by.
CREATE TABLE change_log (
    workspace_id TEXT COLLATE "C" NOT NULL,
    position     BIGINT NOT NULL,
    part         INTEGER NOT NULL,
    committed_at BIGINT NOT NULL,
    entries      BYTEA NOT NULL,
    PRIMARY KEY (workspace_id, position, part)
);

-- The log is pruned through this position: a reader behind it must sync afresh.
ALTER TABLE commit_positions ADD COLUMN pruned_through BIGINT NOT NULL DEFAULT 0;
