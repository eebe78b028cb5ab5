CREATE TABLE topics (
    tenant_id  text NOT NULL,
    topic_id   text COLLATE "C" NOT NULL,
    title      text NOT NULL,
    purpose    text,
    sort_order bigint NOT NULL DEFAULT 0 CHECK (sort_order BETWEEN 0 AND 9007199254740991),
    is_default boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, topic_id)
);

-- Keyset pagination: sortOrder, then creation (TypeIDs are time-ordered).
CREATE INDEX topics_by_order ON topics (tenant_id, sort_order, topic_id);

-- At most one default topic per tenant.
CREATE UNIQUE INDEX topics_one_default ON topics (tenant_id) WHERE is_default;

CREATE TABLE topic_entries (
    tenant_id      text NOT NULL,
    topic_entry_id text COLLATE "C" NOT NULL,
    topic_id       text COLLATE "C" NOT NULL,
    sort_order     bigint NOT NULL DEFAULT 0 CHECK (sort_order BETWEEN 0 AND 9007199254740991),
    content_type   text NOT NULL,
    content        text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, topic_entry_id),
    FOREIGN KEY (tenant_id, topic_id) REFERENCES topics (tenant_id, topic_id) ON DELETE CASCADE
);

CREATE INDEX topic_entries_by_order ON topic_entries (tenant_id, topic_id, sort_order, topic_entry_id);
