-- Webhook endpoints: one row each, its body JSON as the server writes it (secrets
-- sealed under a key the store never holds), and the newest attempts of each
-- (`seq` counts them per endpoint). Written only by the workspace's writer, fenced
-- by its lease as a commit is.
CREATE TABLE webhook_endpoints (
    workspace_id TEXT COLLATE "C" NOT NULL,
    id           TEXT COLLATE "C" NOT NULL,
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE webhook_attempts (
    workspace_id TEXT COLLATE "C" NOT NULL,
    endpoint_id  TEXT COLLATE "C" NOT NULL,
    seq          BIGINT NOT NULL,
    body         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, endpoint_id, seq)
);
