-- API keys. The plaintext key is never stored: hash is HMAC-SHA256 of the key under a
-- server-side pepper, so a leaked table alone cannot be checked against guesses.
CREATE TABLE api_keys (
    key_id         text COLLATE "C" PRIMARY KEY,
    hash           bytea NOT NULL UNIQUE,
    prefix         text NOT NULL,
    name           text,
    tenant_ids     text[] NOT NULL CHECK (cardinality(tenant_ids) >= 1),
    rate_limit     integer CHECK (rate_limit > 0),
    rate_window_ms integer CHECK (rate_window_ms > 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz,
    CHECK ((rate_limit IS NULL) = (rate_window_ms IS NULL))
);

-- Tells every gateway replica to reload its key cache at once.
CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('api_keys', '');
    RETURN NULL;
END $$;

CREATE TRIGGER api_keys_notify AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify();
