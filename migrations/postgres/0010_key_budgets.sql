-- What each node counted of each API key's requests in the last 61 seconds, one count
-- per second (61 big-endian 32-bit integers, oldest second first): shared every second
-- and when a node hands its writer leases over, so that a workspace's next writer goes
-- on counting its keys' budgets from there. Rows whose newest second has left every
-- window are deleted.
CREATE TABLE key_budgets (
    workspace_id text COLLATE "C" NOT NULL,
    key_id text NOT NULL,
    node text NOT NULL,
    newest bigint NOT NULL,
    counts bytea NOT NULL,
    PRIMARY KEY (workspace_id, key_id, node)
);
