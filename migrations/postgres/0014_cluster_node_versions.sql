-- What each node runs and when it last renewed its lease, for the cluster view and the
-- operator console: a node writes its build's version when it takes its name, and the
-- time of each renewal with it. A node of an earlier build writes neither (version '',
-- renewed_at NULL: shown as unknown).
ALTER TABLE cluster_nodes ADD COLUMN version text NOT NULL DEFAULT '';
ALTER TABLE cluster_nodes ADD COLUMN renewed_at timestamptz;
