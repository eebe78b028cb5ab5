-- The answers of POST requests sent with an Idempotency-Key (gateway/internal/idempotency),
-- one row per tenant and key: in flight while locked_until is set (until then a retry is
-- told so; after it, the request may run again), then the stored answer, replayed for a
-- retry with the same request until expires_at. Expiry is this table's: a row past
-- expires_at counts as absent, and libs/retention deletes such rows (by created_at,
-- which a new claim resets) in batches.
CREATE TABLE idempotency_keys (
    tenant_id    text COLLATE "C" NOT NULL,
    idem_key     text COLLATE "C" NOT NULL,
    fingerprint  bytea NOT NULL,
    locked_until timestamptz,
    status       integer,
    headers      jsonb,
    body         bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, idem_key),
    CHECK ((locked_until IS NULL) = (status IS NOT NULL))
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
