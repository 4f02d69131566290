-- The public halves of the nodes' Ed25519 sealing keys (cursors, change feed tokens,
-- download URLs), by key id (the first 8 bytes of the key's SHA-256, hex), so that any
-- node checks what any node sealed, also after that node is gone. Only public keys are
-- here: each private key stays in its node's data dir. Rows are kept (a client may
-- hold a cursor of a node that left); a node whose data dir is new adds one.
CREATE TABLE signing_keys (
    key_id text COLLATE "C" PRIMARY KEY,
    public_key bytea NOT NULL,
    node text NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now()
);
