-- migrate:no-transaction
-- The claim's turns across tenants: each tenant's pending deliveries in due order. The
-- claim steps from tenant to tenant with one probe each (the first entry of a tenant is
-- its earliest pending due time), then reads a window of a tenant's earliest due
-- deliveries; the included columns let it skip held rows and full subscriptions, and
-- often answer from the index alone.
--
-- Built CONCURRENTLY, outside a transaction, so that an upgrade over a large deliveries
-- table keeps taking deliveries while the index builds. A build that fails part way
-- leaves an invalid index, which the first statement drops when the migration runs again.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_tenant_due;
CREATE INDEX CONCURRENTLY deliveries_tenant_due ON deliveries (tenant_id, next_attempt_at, seq)
    INCLUDE (subscription_id, lease_expires_at, delivery_id) WHERE status = 'pending';
-- deliveries_due now serves the time of the next due delivery (NextDue) and the gauges.
