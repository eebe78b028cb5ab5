-- Writers no longer NOTIFY inside their transactions: PostgreSQL serialises the commits of
-- notifying transactions, which capped write throughput at one commit per disk flush.
-- The relay is woken by outbox.Wakeup after the commit instead (see wakeup.go).
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
