-- The events of each tenant, kept for the events API (GET /v0/events) and for replays
-- (docs/webhooks.md, "Events API"), whether or not any subscription received them; body
-- is the bytes a delivery of the event sends. Rows older than EVENT_RETENTION are purged.
CREATE TABLE events (
    tenant_id   text COLLATE "C" NOT NULL,
    event_id    text COLLATE "C" NOT NULL,
    event_type  text COLLATE "C" NOT NULL,
    subject     text COLLATE "C" NOT NULL,
    occurred_at timestamptz NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, event_id)
);

-- Newest first within a tenant (event IDs sort by time), and the purge by age.
CREATE INDEX events_by_type ON events (tenant_id, event_type, event_id);
CREATE INDEX events_by_subject ON events (tenant_id, subject, event_id);
CREATE INDEX events_created_at ON events (created_at);

-- When the subscription was last replayed (POST …/replay): one replay per subscription at
-- a time, at most every ReplayInterval.
ALTER TABLE subscriptions ADD COLUMN last_replay_at timestamptz;
