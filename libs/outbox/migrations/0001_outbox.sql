-- The transactional outbox: events written in the same transaction as the change that
-- causes them, relayed to Kafka by outbox.Relay and then deleted.
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The writing transaction; the relay reads in (txid, id) order and only below the
    -- oldest transaction still running, so a row of a slower transaction is never skipped.
    txid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
    topic      text NOT NULL,
    event_id   text NOT NULL,
    msg_key    text NOT NULL,
    value      bytea NOT NULL,
    headers    jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_txid_id ON outbox (txid, id);

-- Wakes the relay at commit time (notifications are delivered only when the writing
-- transaction commits), so it never has to poll.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox', '');
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
