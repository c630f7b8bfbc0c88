-- +goose Up
-- A team's webhook for chat tools: one URL per team, set by a team lead or
-- an admin. Every job ending that notifies its owner also queues one
-- delivery per team webhook, in the same transaction as the moment that
-- caused it, so an ending is delivered (and notified) once.
CREATE TABLE team_webhooks (
    team       TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    team            TEXT NOT NULL,
    url             TEXT NOT NULL,
    -- The job moment this delivery announces; one delivery per moment.
    moment_id       BIGINT NOT NULL UNIQUE REFERENCES job_moments (id) ON DELETE CASCADE,
    payload         JSONB NOT NULL,
    attempts        INT NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at    TIMESTAMPTZ,
    -- Given up after the last attempt failed.
    failed_at       TIMESTAMPTZ,
    last_error      TEXT NOT NULL DEFAULT '',
    last_status     INT,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_deliveries_team_idx ON webhook_deliveries (team, created_at DESC);

-- A job moment that notified its owner, so the notification is written once.
ALTER TABLE notifications ADD COLUMN moment_id BIGINT UNIQUE REFERENCES job_moments (id) ON DELETE SET NULL;

-- +goose Down
ALTER TABLE notifications DROP COLUMN moment_id;
DROP TABLE webhook_deliveries;
DROP TABLE team_webhooks;
