-- The marker of the records a workspace's last commit touched (a derived change moved
-- their `updated_at`), while their rows are not yet stored again: its stamp and the
-- records' kinds and ids (`actors::store::TouchMarker`), or NULL. The position does not
-- move past a marker: the next commit waits until the rows are stored and it is cleared.
ALTER TABLE commit_positions ADD COLUMN touched TEXT;

-- Loads look for standing markers of every workspace they read: through this index of
-- the few rows that have one, not a scan of every workspace's.
CREATE INDEX commit_positions_touched ON commit_positions (workspace_id)
    WHERE touched IS NOT NULL;
