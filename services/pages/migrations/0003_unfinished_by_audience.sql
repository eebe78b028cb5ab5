-- migrate:no-transaction
-- The worker's claim takes a version only when its audience has no earlier unfinished
-- version (NOT EXISTS over the same audience's queued and processing versions). Without
-- an index of its own, PostgreSQL answered that from audience_versions_work_order, every
-- unfinished version of every audience, filtered: each claim read the whole backlog (400
-- index pages per claim with 40,000 queued), so the worker slowed as its backlog grew.
-- This index holds the unfinished versions by audience; the check reads one or two pages.
--
-- Built CONCURRENTLY, outside a transaction, so an upgrade keeps taking versions while it
-- builds; a build that failed part way leaves an invalid index, dropped first on a rerun.
DROP INDEX CONCURRENTLY IF EXISTS audience_versions_unfinished;
CREATE INDEX CONCURRENTLY audience_versions_unfinished ON audience_versions (tenant_id, audience_id, version_number)
    WHERE status IN ('queued', 'processing');
