-- Outbox rows Kafka refused for good (a message over the broker's message.max.bytes or a
-- topic's max.message.bytes, a record the broker rejects): the relay moves them here, with
-- the error and the time, instead of retrying them forever and holding up every row after
-- them. Columns up to created_at are the outbox row as it was. docs/events.md shows how to
-- inspect and replay them.
CREATE TABLE outbox_dead_letters (
    id         bigint PRIMARY KEY,
    txid       xid8 NOT NULL,
    topic      text NOT NULL,
    event_id   text NOT NULL,
    msg_key    text NOT NULL,
    value      bytea NOT NULL,
    headers    jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    error      text NOT NULL,
    dead_at    timestamptz NOT NULL DEFAULT now()
);
