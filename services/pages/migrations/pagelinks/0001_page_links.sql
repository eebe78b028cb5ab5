-- Page links: a path on a tenant domain (NULL = the tenant's fallback subdomain) mapped
-- to a target. path_key is the normalised, lower-cased path: one live link per path and
-- domain, compared case-insensitively. Deleting is soft and frees the path.
CREATE TABLE page_links (
    tenant_id        text NOT NULL,
    id               text COLLATE "C" NOT NULL,
    tenant_domain_id text,
    path             text NOT NULL,
    path_key         text COLLATE "C" NOT NULL,
    target_type      text NOT NULL CHECK (target_type IN ('audience', 'page', 'page_routing')),
    page_id          text COLLATE "C" NOT NULL,
    audience_id      text COLLATE "C",
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    deleted_at       timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, page_id) REFERENCES pages (tenant_id, id),
    FOREIGN KEY (tenant_id, audience_id) REFERENCES audiences (tenant_id, id),
    CHECK ((target_type = 'audience') = (audience_id IS NOT NULL))
);

-- One live link per path and domain; also the search's keyset order.
CREATE UNIQUE INDEX page_links_path
    ON page_links (tenant_id, coalesce(tenant_domain_id, ''), path_key) WHERE deleted_at IS NULL;
-- Search by target identifier.
CREATE INDEX page_links_by_page ON page_links (tenant_id, page_id) WHERE deleted_at IS NULL;
CREATE INDEX page_links_by_audience ON page_links (tenant_id, audience_id) WHERE deleted_at IS NULL;
