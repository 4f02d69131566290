-- How many transactions have changed each workspace's records or description, and a tag
-- drawn at random by the last of them. Both are set in the same transaction as the
-- change, so two equal readings mean nothing changed in between: a checkpoint of the
-- in-memory state written at a position is valid exactly while the store still says it.
-- (The tag tells apart two stores that reached the same count: a database replaced, a
-- backup restored and written again.)
CREATE TABLE commit_positions (
    workspace_id TEXT COLLATE "C" PRIMARY KEY,
    position     BIGINT NOT NULL,
    tag          TEXT NOT NULL
);
