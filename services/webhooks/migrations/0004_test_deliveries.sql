-- Deliveries of test events (POST …/test): the sender marks their attempts with the
-- X-Webhook-Test header. A constant default, so adding it rewrites nothing; every
-- delivery written before it is a real one.
ALTER TABLE deliveries ADD COLUMN test boolean NOT NULL DEFAULT false;
