-- +goose Up
-- Templates are versioned and immutable: a change is a new row with the next version.
CREATE TABLE templates (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    kind        TEXT NOT NULL,
    title       TEXT NOT NULL,
    spec        JSONB NOT NULL,
    digest      TEXT NOT NULL,
    created_by  TEXT NOT NULL DEFAULT 'system',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    retired_at  TIMESTAMPTZ,
    UNIQUE (name, version)
);
CREATE INDEX templates_name_idx ON templates (name, version DESC);

-- A launch is the portal's record of who launched what; the workload's
-- status lives in Kubernetes. launch_id is the idempotency key of the form.
CREATE TABLE launches (
    id               BIGSERIAL PRIMARY KEY,
    launch_id        TEXT NOT NULL UNIQUE,
    team             TEXT NOT NULL,
    namespace        TEXT NOT NULL,
    name             TEXT NOT NULL,
    kind             TEXT NOT NULL,
    template         TEXT NOT NULL,
    template_version INTEGER NOT NULL,
    owner            TEXT NOT NULL,
    parameters       JSONB NOT NULL DEFAULT '{}'::jsonb,
    objects          JSONB NOT NULL DEFAULT '[]'::jsonb,
    manifest         TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at       TIMESTAMPTZ,
    UNIQUE (namespace, name)
);
CREATE INDEX launches_team_idx ON launches (team, created_at DESC);
CREATE INDEX launches_owner_idx ON launches (owner, created_at DESC);

-- +goose Down
DROP TABLE launches;
DROP TABLE templates;
