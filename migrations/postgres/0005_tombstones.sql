-- Records that left what the API shows (deleted, made private, a removed user, …), by
-- entity (`Entity` index in `actors::model::Entity::ALL`), with when they left, in
-- milliseconds since the epoch: what lists answer with include_deleted=true. Written
-- in the transaction of the commit that decides them; pruned with the change log.
CREATE TABLE tombstones (
    workspace_id TEXT COLLATE "C" NOT NULL,
    entity       SMALLINT NOT NULL,
    id           TEXT COLLATE "C" NOT NULL,
    deleted_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, entity, id)
);
