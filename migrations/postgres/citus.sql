-- Distributes recruitd's PostgreSQL schema over a Citus cluster, by workspace: every
-- table is distributed by `workspace_id` and co-located with `workspaces`, so all of a
-- workspace's rows live on one shard and each statement of its reads, writes, loads
-- and change feed is routed to that shard alone.
--
-- Written for Citus, tested on plain PostgreSQL only: recruitd's own tests check that
-- every table below leads its primary key and unique indexes with `workspace_id`, and
-- that this file distributes every table of the schema, but no Citus cluster runs them.
--
-- Run once on the coordinator, after recruitd has created its schema (its first start,
-- or `recruitd import`) and before the workspaces hold data of consequence:
--   psql "$RECRUITD_DATABASE_URL" -f migrations/postgres/citus.sql
--
-- Statements that read across workspaces by nature, all on the coordinator's
-- multi-shard path and none on a request's: listing the workspaces and loading the API
-- keys when a node starts, revoking a key by its id, and the advisory lock that keeps
-- offline writers off a store servers use. `_sqlx_migrations` stays a local table.
-- The cluster's nodes (`cluster_nodes`) and their public sealing keys (`signing_keys`)
-- belong to no workspace: reference tables, copied to every worker. A node's report of
-- its holdings (`cluster_holdings`, once a second) and the cluster view read and write
-- many workspaces' rows: background and admin statements, off the request paths. A
-- workspace's writer lease (`workspace_leases`) is checked by each of its commits on its
-- own shard; renewing and taking leases are background statements. The keys' budgets
-- (`key_budgets`) are written by each node once a second for every workspace it
-- counted, and read by a new writer for its workspace alone: background statements too.
SELECT create_distributed_table('workspaces', 'workspace_id');
SELECT create_distributed_table('records', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('api_keys', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('commit_marks', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('commit_positions', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('change_log', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('tombstones', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('blobs', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('cluster_holdings', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('workspace_leases', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('key_budgets', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('webhook_endpoints', 'workspace_id', colocate_with => 'workspaces');
SELECT create_distributed_table('webhook_attempts', 'workspace_id', colocate_with => 'workspaces');
SELECT create_reference_table('cluster_nodes');
SELECT create_reference_table('signing_keys');
