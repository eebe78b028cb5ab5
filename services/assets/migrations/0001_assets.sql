CREATE TABLE assets (
    tenant_id            text COLLATE "C" NOT NULL,
    asset_id             text COLLATE "C" NOT NULL,
    name                 text NOT NULL,
    purpose              text NOT NULL,
    tags                 text[] COLLATE "C" NOT NULL DEFAULT '{}',
    asset_type           text COLLATE "C" NOT NULL
        CHECK (asset_type IN ('image', 'logo', 'icon', 'video', 'custom-component')),
    parent_asset_id      text COLLATE "C",
    hidden               boolean NOT NULL DEFAULT false,
    file_id              text COLLATE "C" NOT NULL,
    object_key           text COLLATE "C" NOT NULL,
    content_type         text NOT NULL,
    size_bytes           bigint NOT NULL CHECK (size_bytes >= 0),
    sha256               text COLLATE "C" NOT NULL,
    preview_file_id      text COLLATE "C",
    preview_key          text COLLATE "C",
    preview_content_type text,
    preview_size_bytes   bigint,
    preview_sha256       text COLLATE "C",
    lifecycle_state      text COLLATE "C" NOT NULL DEFAULT 'active'
        CHECK (lifecycle_state IN ('active', 'trashed', 'deleted')),
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    trashed_at           timestamptz,
    deleted_at           timestamptz,
    PRIMARY KEY (tenant_id, asset_id),
    -- A parent is never removed (deleted assets keep their record), so the reference holds.
    FOREIGN KEY (tenant_id, parent_asset_id) REFERENCES assets (tenant_id, asset_id),
    CHECK ((lifecycle_state = 'trashed') = (trashed_at IS NOT NULL) OR lifecycle_state = 'deleted'),
    CHECK ((lifecycle_state = 'deleted') = (deleted_at IS NOT NULL))
);

-- Keyset pagination of the active list and the trash, newest first, with and without
-- the assetType filter (scanned backwards).
CREATE INDEX assets_by_state ON assets (tenant_id, lifecycle_state, asset_id);
CREATE INDEX assets_by_state_type ON assets (tenant_id, lifecycle_state, asset_type, asset_id);

-- The purge finds trashed assets past the retention across tenants.
CREATE INDEX assets_purge_due ON assets (trashed_at) WHERE lifecycle_state = 'trashed';

-- Objects that must be removed from storage once due_at passes, unless their row is
-- deleted first. An upload records its objects here before writing them (due after the
-- longest an upload may take) and deletes the rows in the transaction that commits the
-- asset; a deletion records the asset's objects (due at once) in the transaction that
-- marks it deleted. So a crash at any point leaves a row here, never an untracked object.
CREATE TABLE object_cleanup (
    tenant_id  text COLLATE "C" NOT NULL,
    object_key text COLLATE "C" NOT NULL,
    due_at     timestamptz NOT NULL,
    PRIMARY KEY (object_key)
);

CREATE INDEX object_cleanup_due ON object_cleanup (due_at);
