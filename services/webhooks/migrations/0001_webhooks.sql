CREATE TABLE subscriptions (
    tenant_id             text COLLATE "C" NOT NULL,
    subscription_id       text COLLATE "C" NOT NULL,
    url                   text NOT NULL,
    -- NULL means every public event type, including types added later.
    events                text[] COLLATE "C",
    active                boolean NOT NULL,
    secret                text NOT NULL,
    -- After a rotation the replaced secret keeps signing webhook-signature until then.
    previous_secret       text,
    previous_secret_until timestamptz,
    disabled_reason       text,
    disabled_at           timestamptz,
    -- First failed attempt since the last success; NULL while deliveries succeed.
    failing_since         timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, subscription_id)
);

CREATE TABLE deliveries (
    tenant_id        text COLLATE "C" NOT NULL,
    delivery_id      text COLLATE "C" NOT NULL,
    subscription_id  text COLLATE "C" NOT NULL,
    event_id         text COLLATE "C" NOT NULL,
    event_type       text COLLATE "C" NOT NULL,
    -- The event's subject (its aggregate): deliveries with the same key are sent one at a
    -- time, in order.
    ordering_key     text COLLATE "C" NOT NULL,
    -- Insertion order, the tie-breaker of deliveries due at the same moment.
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    -- The exact bytes sent on every attempt.
    body             bytea NOT NULL,
    status           text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    -- Position in the retry schedule: the number of automatic retries already scheduled.
    retry_step       integer NOT NULL DEFAULT 0,
    -- Attempts claimed so far; numbers the attempts.
    attempt_count    integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    -- A worker holds the delivery until then; after it, another may claim it (crash recovery).
    lease_expires_at timestamptz,
    lease_token      bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, delivery_id),
    -- One delivery per subscription and event, however often the event arrives.
    UNIQUE (tenant_id, subscription_id, event_id),
    FOREIGN KEY (tenant_id, subscription_id) REFERENCES subscriptions (tenant_id, subscription_id) ON DELETE CASCADE,
    CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);

-- The workers' queue: due deliveries in due order; the included columns let the claim
-- skip saturated subscriptions and held rows without visiting the table.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq)
    INCLUDE (subscription_id, lease_expires_at) WHERE status = 'pending';
-- Held deliveries, for the time the earliest lease runs out.
CREATE INDEX deliveries_leased ON deliveries (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
-- The deliveries list (newest first), with and without a status filter.
CREATE INDEX deliveries_by_subscription ON deliveries (tenant_id, subscription_id, delivery_id);
CREATE INDEX deliveries_by_status ON deliveries (tenant_id, subscription_id, status, delivery_id);
-- Retention of finished deliveries.
CREATE INDEX deliveries_finished ON deliveries (updated_at) WHERE status <> 'pending';

CREATE TABLE delivery_attempts (
    tenant_id        text COLLATE "C" NOT NULL,
    delivery_id      text COLLATE "C" NOT NULL,
    attempt_no       integer NOT NULL,
    attempted_at     timestamptz NOT NULL,
    status_code      integer,
    duration_ms      integer NOT NULL CHECK (duration_ms >= 0),
    error            text,
    response_snippet text,
    PRIMARY KEY (tenant_id, delivery_id, attempt_no),
    FOREIGN KEY (tenant_id, delivery_id) REFERENCES deliveries (tenant_id, delivery_id) ON DELETE CASCADE
);
