-- Key lifecycle (docs/keys.md): a key may expire (expires_at: refused from then on, on
-- every replica, without a reload), be limited to scopes (NULL: every operation), and be
-- the successor of a rotated key (rotated_from; the old key then expires after its grace
-- period).
ALTER TABLE api_keys
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN scopes       text[] CHECK (scopes IS NULL OR cardinality(scopes) >= 1),
    ADD COLUMN rotated_from text COLLATE "C";

-- When each key was last used, written by each gateway replica in batches (not on every
-- request), in a table of its own so that these writes do not wake every replica's key
-- cache as writes to api_keys do.
CREATE TABLE api_key_usage (
    key_id       text COLLATE "C" PRIMARY KEY REFERENCES api_keys (key_id) ON DELETE CASCADE,
    last_used_at timestamptz NOT NULL
);
