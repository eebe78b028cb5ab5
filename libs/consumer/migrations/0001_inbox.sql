-- Events each consumer has processed, so a redelivered event is a no-op.
CREATE TABLE inbox (
    consumer     text NOT NULL,
    event_id     text NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- Messages a consumer gave up on after its retries, kept for inspection and replay.
CREATE TABLE inbox_dead_letters (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer        text NOT NULL,
    topic           text NOT NULL,
    kafka_partition int NOT NULL,
    kafka_offset    bigint NOT NULL,
    event_id        text,
    error           text NOT NULL,
    value           bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
