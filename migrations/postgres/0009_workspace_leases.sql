-- Each workspace's writer in a cluster: the one server that commits it. The holder
-- renews its lease with its node's; every commit checks, in its own transaction, that
-- its server still holds the lease at the epoch it took (and locks the row until it
-- ends). A new writer takes the lease once it has passed, or once its holder's start is
-- gone, by deleting the row and inserting the next epoch: that waits for every commit
-- still checking the old one, so the new writer sees all of them.
CREATE TABLE workspace_leases (
    workspace_id text COLLATE "C" PRIMARY KEY,
    holder text NOT NULL,
    incarnation text NOT NULL,
    epoch bigint NOT NULL,
    lease_until timestamptz NOT NULL
);

-- How nodes reach and trust each other. A node pins the certificate another node
-- published (its SHA-256, DER, hex) when it connects to that node's advertised URL; and
-- a node's requests to another carry a secret drawn by each start, of which only the
-- SHA-256 is here.
ALTER TABLE cluster_nodes ADD COLUMN cert_sha256 text NOT NULL DEFAULT '';
ALTER TABLE cluster_nodes ADD COLUMN secret_sha256 text NOT NULL DEFAULT '';
