-- Every table's primary key leads with the workspace, so that the schema can be
-- distributed by workspace (Citus: `migrations/postgres/citus.sql`), each workspace's
-- rows on one shard and the statements of its reads, writes and loads routed there.
-- Two tables did not: `workspaces`, keyed by its id under another name, and `api_keys`,
-- keyed by the key's id alone. A key's id stays unique across workspaces: the domain
-- refuses an import that names another workspace's key (`snapshot::validate`), and the
-- server draws new ids at random.
ALTER TABLE workspaces RENAME COLUMN id TO workspace_id;

ALTER TABLE api_keys ALTER COLUMN workspace_id TYPE TEXT COLLATE "C";
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey;
ALTER TABLE api_keys ADD PRIMARY KEY (workspace_id, id);
