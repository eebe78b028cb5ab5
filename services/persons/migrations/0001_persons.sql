-- Trigram indexes make substring search fast (pg_trgm ships with PostgreSQL's contrib and
-- is a trusted extension, so the database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE persons (
    tenant_id            text NOT NULL,
    person_id            text COLLATE "C" NOT NULL,
    name                 text NOT NULL,
    email                text,
    domain               text,
    slug                 text COLLATE "C" NOT NULL,
    phone_number         text,
    linkedin_profile_url text,
    -- Normalised identifiers the form enrichment matches on (computed by the service).
    email_key            text,
    phone_key            text,
    linkedin_key         text,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    -- Newest log written to the person (feeds the account's latestActivityAt).
    last_log_at          timestamptz,
    -- What search matches: name, email and domain, lower-cased.
    search_text          text GENERATED ALWAYS AS
                         (lower(name || ' ' || coalesce(email, '') || ' ' || coalesce(domain, ''))) STORED,
    PRIMARY KEY (tenant_id, person_id)
);

CREATE UNIQUE INDEX persons_slug ON persons (tenant_id, slug);
CREATE INDEX persons_domain ON persons (tenant_id, domain, person_id) WHERE domain IS NOT NULL;
CREATE INDEX persons_email_key ON persons (tenant_id, email_key) WHERE email_key IS NOT NULL;
CREATE INDEX persons_phone_key ON persons (tenant_id, phone_key) WHERE phone_key IS NOT NULL;
CREATE INDEX persons_linkedin_key ON persons (tenant_id, linkedin_key) WHERE linkedin_key IS NOT NULL;
CREATE INDEX persons_search ON persons USING gin (search_text gin_trgm_ops);

CREATE TABLE accounts (
    tenant_id   text NOT NULL,
    account_id  text COLLATE "C" NOT NULL,
    domain      text NOT NULL,
    name        text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- Newest log written to the account.
    last_log_at timestamptz,
    PRIMARY KEY (tenant_id, account_id)
);

-- One account per domain and tenant; persons link to it through their domain.
CREATE UNIQUE INDEX accounts_domain ON accounts (tenant_id, domain);

CREATE TABLE person_logs (
    tenant_id       text NOT NULL,
    person_log_id   text COLLATE "C" NOT NULL,
    person_id       text COLLATE "C" NOT NULL,
    source          text NOT NULL,
    type            text NOT NULL,
    payload         jsonb NOT NULL,
    idempotency_key text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz,
    deleted_at      timestamptz,
    PRIMARY KEY (tenant_id, person_log_id),
    FOREIGN KEY (tenant_id, person_id) REFERENCES persons (tenant_id, person_id) ON DELETE CASCADE
);

CREATE INDEX person_logs_by_person ON person_logs (tenant_id, person_id, person_log_id);
CREATE UNIQUE INDEX person_logs_idempotency ON person_logs (tenant_id, person_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE account_logs (
    tenant_id       text NOT NULL,
    account_log_id  text COLLATE "C" NOT NULL,
    account_id      text COLLATE "C" NOT NULL,
    source          text NOT NULL,
    type            text NOT NULL,
    payload         jsonb NOT NULL,
    idempotency_key text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz,
    deleted_at      timestamptz,
    PRIMARY KEY (tenant_id, account_log_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES accounts (tenant_id, account_id) ON DELETE CASCADE
);

CREATE INDEX account_logs_by_account ON account_logs (tenant_id, account_id, account_log_id);
CREATE UNIQUE INDEX account_logs_idempotency ON account_logs (tenant_id, account_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- One row per enriched form submission: a second event about the same submission (a
-- re-emission under a new event ID) changes nothing.
CREATE TABLE form_enrichments (
    tenant_id          text NOT NULL,
    form_submission_id text NOT NULL,
    event_id           text NOT NULL,
    outcome            text NOT NULL,
    person_id          text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, form_submission_id)
);
