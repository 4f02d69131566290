-- The change log behind GET /v1/changes: per workspace, which records each transaction
-- changed, written in that transaction at the commit position it moved to (`position`,
-- from commit_positions), so the log is gap-free and in commit order. A transaction's
-- entries are cut into parts of a few thousand (`part` 0, 1, …); `entries` holds them
-- in the encoding of `actors::changes`. `committed_at` (milliseconds since the epoch)
-- is what retention prunes by. A rowid table: its rows are large blobs, which SQLite
-- keeps better outside a WITHOUT ROWID b-tree.
CREATE TABLE change_log (
    workspace_id TEXT NOT NULL,
    position     INTEGER NOT NULL,
    part         INTEGER NOT NULL,
    committed_at INTEGER NOT NULL,
    entries      BLOB NOT NULL,
    UNIQUE (workspace_id, position, part)
);

-- The log is pruned through this position: a reader behind it must sync afresh.
ALTER TABLE commit_positions ADD COLUMN pruned_through INTEGER NOT NULL DEFAULT 0;
