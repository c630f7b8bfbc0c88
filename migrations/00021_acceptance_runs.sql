-- +goose Up
-- One acceptance run of a pool. The leader's loop advances it step by step;
-- every change is a compare-and-set on version, so a replica that lost the
-- lead (or a restarted portal) resumes where the run was and never runs a
-- step twice. definition is the definition as it was when the run started.
CREATE TABLE acceptance_runs (
    id             BIGSERIAL PRIMARY KEY,
    pool           TEXT NOT NULL,
    team           TEXT NOT NULL,
    definition     JSONB NOT NULL,
    started_by     TEXT NOT NULL,
    starter_groups JSONB NOT NULL DEFAULT '[]',
    launch_id      TEXT NOT NULL UNIQUE,
    status         TEXT NOT NULL CHECK (status IN ('running', 'passed', 'failed')),
    step           INTEGER NOT NULL DEFAULT 1,
    version        BIGINT NOT NULL DEFAULT 0,
    namespace      TEXT NOT NULL DEFAULT '',
    job_name       TEXT NOT NULL DEFAULT '',
    state          JSONB NOT NULL DEFAULT '{}',
    steps          JSONB NOT NULL DEFAULT '[]',
    cost_usd       NUMERIC(20, 6),
    created_at     TIMESTAMPTZ NOT NULL,
    finished_at    TIMESTAMPTZ
);
CREATE INDEX acceptance_runs_pool ON acceptance_runs (pool, created_at DESC);
CREATE INDEX acceptance_runs_running ON acceptance_runs (id) WHERE status = 'running';

-- +goose Down
DROP TABLE acceptance_runs;
