-- Pages: the top-level container. Soft delete keeps the row (deleted_at) so restore works.
CREATE TABLE pages (
    tenant_id           text NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    name                text NOT NULL,
    title               text NOT NULL,
    page_context        text NOT NULL DEFAULT '',
    brand_id            text NOT NULL DEFAULT '',
    page_type           text NOT NULL,
    status              text NOT NULL,
    flags               text[] NOT NULL DEFAULT '{}',
    audiences_count     bigint NOT NULL DEFAULT 0 CHECK (audiences_count >= 0),
    actions             jsonb NOT NULL DEFAULT '[]',
    action_card_widgets jsonb NOT NULL DEFAULT '[]',
    footer_links        jsonb NOT NULL DEFAULT '[]',
    nav_links           jsonb NOT NULL DEFAULT '[]',
    scripts             jsonb NOT NULL DEFAULT '[]',
    header_action_id    text,
    metadata            jsonb,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    archived_at         timestamptz,
    deleted_at          timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- Keyset pagination of a tenant's visible pages in creation order (TypeIDs are time-ordered).
CREATE INDEX pages_by_id ON pages (tenant_id, id) WHERE deleted_at IS NULL;

-- Audiences belong to one page. latest/published version IDs are denormalised pointers
-- kept in the same transaction as the version changes.
CREATE TABLE audiences (
    tenant_id                         text NOT NULL,
    id                                text COLLATE "C" NOT NULL,
    page_id                           text COLLATE "C" NOT NULL,
    computed_name                     text NOT NULL,
    custom_name                       text,
    status                            text NOT NULL,
    flags                             text[] NOT NULL DEFAULT '{}',
    is_new_page_agent                 boolean NOT NULL DEFAULT true,
    person_id                         text,
    person_route_key                  text,
    action_form_id_override           text,
    action_form_instructions_override text,
    action_url_override               text,
    supplementary_context             text,
    metadata_override                 jsonb,
    publish_behavior                  text NOT NULL,
    latest_version_id                 text COLLATE "C",
    published_version_id              text COLLATE "C",
    created_at                        timestamptz NOT NULL,
    updated_at                        timestamptz NOT NULL,
    archived_at                       timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, page_id) REFERENCES pages (tenant_id, id)
);

CREATE INDEX audiences_by_page ON audiences (tenant_id, page_id, id);

-- Audience versions and their processing state. The worker claims rows with
-- FOR UPDATE SKIP LOCKED and a lease (lease_until); an expired lease is claimed again.
CREATE TABLE audience_versions (
    tenant_id             text NOT NULL,
    id                    text COLLATE "C" NOT NULL,
    page_id               text COLLATE "C" NOT NULL,
    audience_id           text COLLATE "C" NOT NULL,
    version_number        bigint NOT NULL CHECK (version_number BETWEEN 1 AND 9007199254740991),
    status                text NOT NULL,
    is_new_page_agent     boolean NOT NULL,
    supplementary_context text,
    operation_key         text,
    publish_on_complete   boolean NOT NULL,
    snapshot              jsonb,
    queue_duration_ms     double precision,
    attempts              integer NOT NULL DEFAULT 0,
    lease_until           timestamptz,
    last_error            text,
    created_at            timestamptz NOT NULL,
    queued_at             timestamptz,
    processing_at         timestamptz,
    became_draft_at       timestamptz,
    cancelled_at          timestamptz,
    obsolete_at           timestamptz,
    published_at          timestamptz,
    archived_at           timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, audience_id, version_number),
    FOREIGN KEY (tenant_id, audience_id) REFERENCES audiences (tenant_id, id)
);

-- operationKey idempotency: one version per (audience, key), enforced by the database.
CREATE UNIQUE INDEX audience_versions_operation_key
    ON audience_versions (tenant_id, audience_id, operation_key) WHERE operation_key IS NOT NULL;

-- The worker's queue: only unfinished versions, oldest first.
CREATE INDEX audience_versions_work ON audience_versions (queued_at)
    WHERE status IN ('queued', 'processing');

-- The editing conversation of an audience (created with its first message).
CREATE TABLE audience_conversations (
    tenant_id            text NOT NULL,
    id                   text COLLATE "C" NOT NULL,
    audience_id          text COLLATE "C" NOT NULL,
    published_message_id text,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, audience_id),
    FOREIGN KEY (tenant_id, audience_id) REFERENCES audiences (tenant_id, id)
);

CREATE TABLE audience_messages (
    tenant_id      text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    audience_id    text COLLATE "C" NOT NULL,
    content        text NOT NULL,
    has_snapshot   boolean NOT NULL DEFAULT false,
    is_interrupted boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, audience_id) REFERENCES audiences (tenant_id, id)
);

CREATE INDEX audience_messages_by_audience ON audience_messages (tenant_id, audience_id, id);

-- Proposed changes of a message; pending until a version applies them (applied_version_id).
CREATE TABLE audience_changes (
    tenant_id          text NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    audience_id        text COLLATE "C" NOT NULL,
    message_id         text COLLATE "C" NOT NULL,
    position           integer NOT NULL,
    field              text NOT NULL,
    previous_value     text NOT NULL,
    new_value          text NOT NULL,
    applied_version_id text COLLATE "C",
    created_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, message_id) REFERENCES audience_messages (tenant_id, id)
);

CREATE INDEX audience_changes_pending ON audience_changes (tenant_id, audience_id, id)
    WHERE applied_version_id IS NULL;
