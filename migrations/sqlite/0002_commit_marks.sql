-- The id of the last batch committed per workspace. Written in the same transaction as
-- the batch, so after a commit whose outcome the server could not learn, reading this row
-- says whether it took effect. One row per workspace suffices: a workspace never starts a
-- batch before the previous one's outcome is known.
CREATE TABLE commit_marks (
    workspace_id TEXT PRIMARY KEY,
    batch_id     TEXT NOT NULL
) WITHOUT ROWID;
