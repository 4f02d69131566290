-- A writer lease holds while its holder's node row does, under the incarnation it names:
-- the node's one renewal renews every lease it holds. A node is alive while its lease
-- holds and the store session it renews on is still there (a killed process's session
-- ends with it).
--
-- Leases, holdings and commit positions carry the id of the transaction that last wrote
-- them (`xid`), so that a node reads only what changed since it last looked (see
-- src/store/cluster.rs): nothing at all while nothing changes, however many workspaces
-- there are.
ALTER TABLE workspace_leases DROP COLUMN lease_until;
ALTER TABLE workspace_leases ADD COLUMN xid bigint NOT NULL DEFAULT 0;
CREATE INDEX workspace_leases_xid ON workspace_leases (xid);

-- A holding's position is NULL once its node let the copy go; rows of an earlier start
-- of the node (another incarnation) are not its.
ALTER TABLE cluster_holdings ADD COLUMN incarnation text NOT NULL DEFAULT '';
ALTER TABLE cluster_holdings ADD COLUMN xid bigint NOT NULL DEFAULT 0;
ALTER TABLE cluster_holdings ALTER COLUMN position DROP NOT NULL;
CREATE INDEX cluster_holdings_xid ON cluster_holdings (xid);

ALTER TABLE commit_positions ADD COLUMN xid bigint NOT NULL DEFAULT 0;
CREATE INDEX commit_positions_xid ON commit_positions (xid);

ALTER TABLE cluster_nodes ADD COLUMN session_pid integer NOT NULL DEFAULT 0;
ALTER TABLE cluster_nodes ADD COLUMN session_started timestamptz;
