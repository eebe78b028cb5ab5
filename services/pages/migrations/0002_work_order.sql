-- migrate:no-transaction
-- The worker's claim walks the unfinished versions in (queued_at, id) order and stops at
-- the first it may take. With the index on queued_at alone, PostgreSQL had to gather and
-- sort every version of the oldest queued_at before the LIMIT, and with a backlog of
-- thousands each claim cost tens of milliseconds (31 ms at 6,000 queued; 0.09 ms with
-- this index); under load the worker fell ever further behind (docs/benchmarks.md, the
-- end-to-end event run).
--
-- Built CONCURRENTLY, outside a transaction, so an upgrade keeps taking versions while it
-- builds; a build that failed part way leaves an invalid index, dropped first on a rerun.
DROP INDEX CONCURRENTLY IF EXISTS audience_versions_work_order;
CREATE INDEX CONCURRENTLY audience_versions_work_order ON audience_versions (queued_at, id)
    WHERE status IN ('queued', 'processing');
DROP INDEX CONCURRENTLY IF EXISTS audience_versions_work;
