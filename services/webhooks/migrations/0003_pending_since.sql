-- migrate:no-transaction
-- The oldest pending delivery, for webhook_oldest_pending_age_seconds (the alert
-- CustomerAPIWebhookDeliveryStuck). Without it the gauge's min(created_at) read every
-- pending row at each scrape: 0.3 s with 1,000,000 pending, and past the scrape's 3 s
-- timeout with about ten times that, when the gauges (and the alert) would vanish just
-- as a backlog needs them. With it the read is one index probe. Entries are added at the
-- right end (created_at is the insert's time); those of finished deliveries stay, dead,
-- at the left until vacuum removes them, and the probe steps over them.
--
-- Built CONCURRENTLY, outside a transaction, as deliveries_tenant_due is.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_pending_since;
CREATE INDEX CONCURRENTLY deliveries_pending_since ON deliveries (created_at) WHERE status = 'pending';
