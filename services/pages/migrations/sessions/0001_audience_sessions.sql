-- Audience sessions: one recorded visit. The derived metrics (is_bounce,
-- time_spent_seconds) are filled by the computation worker, which claims pending rows
-- with FOR UPDATE SKIP LOCKED and completes them in the same transaction.
CREATE TABLE audience_sessions (
    tenant_id                    text NOT NULL,
    id                           text COLLATE "C" NOT NULL,
    page_id                      text COLLATE "C" NOT NULL,
    audience_id                  text COLLATE "C",
    analytics_session_id         text NOT NULL,
    -- SHA-256 of the recorded request: a replay with the same body returns the session,
    -- a different body with the same analyticsSessionId is a conflict.
    request_hash                 bytea NOT NULL,
    page_title                   text,
    page_url                     text,
    session_started_at           timestamptz NOT NULL,
    session_ended_at             timestamptz,
    has_conversion               boolean NOT NULL,
    max_scroll_depth_percentage  double precision,
    questions_asked_count        bigint NOT NULL,
    total_clicks_count           bigint NOT NULL,
    utm_campaign                 text,
    utm_content                  text,
    utm_medium                   text,
    utm_source                   text,
    utm_term                     text,
    form_submission_id           text COLLATE "C",
    form_submission_email        text,
    form_submission_phone        text,
    form_submission_linkedin_url text,
    form_submission_name         text,
    form_submission_fields       jsonb,
    form_submission_identifier   text,
    form_submission_identifier_type text,
    form_submitted_at            timestamptz,
    computation_status           text NOT NULL DEFAULT 'pending'
        CHECK (computation_status IN ('pending', 'completed', 'failed')),
    computation_error            text,
    computation_attempts         integer NOT NULL DEFAULT 0,
    is_bounce                    boolean NOT NULL DEFAULT false,
    time_spent_seconds           double precision,
    computed_at                  timestamptz,
    created_at                   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, page_id) REFERENCES pages (tenant_id, id),
    FOREIGN KEY (tenant_id, audience_id) REFERENCES audiences (tenant_id, id),
    CHECK (session_ended_at IS NULL OR session_ended_at >= session_started_at)
);

-- One recorded session per analytics session and page (replays are idempotent).
CREATE UNIQUE INDEX audience_sessions_analytics_id
    ON audience_sessions (tenant_id, page_id, analytics_session_id);

-- Keyset pagination: newest sessionStartedAt first, per page and per audience.
CREATE INDEX audience_sessions_by_page
    ON audience_sessions (tenant_id, page_id, session_started_at DESC, id DESC);
CREATE INDEX audience_sessions_by_audience
    ON audience_sessions (tenant_id, audience_id, session_started_at DESC, id DESC)
    WHERE audience_id IS NOT NULL;

-- The computation worker's queue: pending sessions only, oldest first.
CREATE INDEX audience_sessions_pending ON audience_sessions (created_at)
    WHERE computation_status = 'pending';
