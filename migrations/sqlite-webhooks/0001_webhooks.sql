-- The webhook rows of the embedded store, in a file of their own (`webhooks.db`, beside
-- `recruit.db`), so that the deliveries' records and the workspaces' commits each have
-- a writer of their own. Webhook endpoints: one row each, its body JSON as the server
-- writes it (secrets sealed under a key the store never holds), and the newest attempts
-- of each (`seq` counts them per endpoint).
CREATE TABLE webhook_endpoints (
    workspace_id TEXT NOT NULL,
    id           TEXT NOT NULL,
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE TABLE webhook_attempts (
    workspace_id TEXT NOT NULL,
    endpoint_id  TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, endpoint_id, seq)
);

-- Rows moved in from where an earlier release kept them (`source`: `recruit.db`, whose
-- tables of the same names held them), written in the transaction that moved them: a
-- move is done once, and one interrupted before the old rows were cleared is not done
-- again.
CREATE TABLE moved_in (
    source    TEXT PRIMARY KEY,
    moved_at  INTEGER NOT NULL,
    endpoints INTEGER NOT NULL,
    attempts  INTEGER NOT NULL
) WITHOUT ROWID;
