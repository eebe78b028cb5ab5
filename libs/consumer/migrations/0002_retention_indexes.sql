-- migrate:no-transaction
-- The retention pruner (libs/retention) deletes the oldest rows batch by batch through
-- these indexes. Built concurrently: the inbox takes a row per event consumed.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_processed_at ON inbox (processed_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_dead_letters_created_at ON inbox_dead_letters (created_at);
