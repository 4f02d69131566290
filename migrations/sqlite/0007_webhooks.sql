-- Webhook endpoints: one row each, its body JSON as the server writes it (secrets
-- sealed under a key the store never holds), and the newest attempts of each
-- (`seq` counts them per endpoint).
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
