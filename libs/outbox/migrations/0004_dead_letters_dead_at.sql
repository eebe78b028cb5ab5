-- migrate:no-transaction
-- The retention pruner (libs/retention) deletes the oldest dead letters batch by batch
-- through this index.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_dead_letters_dead_at ON outbox_dead_letters (dead_at);
