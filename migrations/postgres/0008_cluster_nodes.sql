-- The nodes of a cluster: every server on this database. A node holds its row by a
-- lease it renews every second; whether a lease has run out is read off PostgreSQL's
-- clock alone, so the nodes' own clocks never decide it. A node that stops leaves its
-- row behind, shown as not alive once the lease has passed, until a node of that name
-- starts again.
CREATE TABLE cluster_nodes (
    name text PRIMARY KEY,
    advertise_url text NOT NULL,
    -- Which start of the node holds the row: a node that finds another incarnation in
    -- it lost its name (its lease ran out while it was stopped, and a new start took it).
    incarnation text NOT NULL,
    started_at timestamptz NOT NULL,
    lease_until timestamptz NOT NULL
);

-- What each node holds in memory, and the commit position its copy stands at: written
-- by the node with every renewal of its lease, read by the cluster view (a holder's lag
-- is how long ago the first commit it lacks was made).
CREATE TABLE cluster_holdings (
    workspace_id text COLLATE "C" NOT NULL,
    node text NOT NULL,
    position bigint NOT NULL,
    PRIMARY KEY (workspace_id, node)
);
