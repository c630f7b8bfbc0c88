-- +goose Up
-- Prices per GPU-hour (or per MIG slice-hour) of a flavor's accelerator
-- resource. A new price takes effect at effective_from; earlier runs keep
-- the price they were recorded with, because ledger rows store it.
CREATE TABLE gpu_prices (
    flavor         TEXT NOT NULL,
    resource       TEXT NOT NULL,
    effective_from TIMESTAMPTZ NOT NULL,
    usd_per_hour   NUMERIC(12, 4) NOT NULL CHECK (usd_per_hour >= 0),
    set_by         TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (flavor, resource, effective_from)
);

-- One row per ended run of a Kueue Workload, written when it finished or was
-- evicted, so cost history survives the deletion of the objects. run_key is
-- the workload UID plus the admission time, so every replica writing the
-- same run inserts one row (ON CONFLICT DO NOTHING).
CREATE TABLE cost_ledger (
    run_key             TEXT PRIMARY KEY,
    workload_uid        TEXT NOT NULL,
    team                TEXT NOT NULL,
    namespace           TEXT NOT NULL,
    job_name            TEXT NOT NULL,
    job_kind            TEXT NOT NULL,
    owner               TEXT NOT NULL DEFAULT '',
    flavor              TEXT NOT NULL,
    resource            TEXT NOT NULL,
    gpus                BIGINT NOT NULL CHECK (gpus >= 0),
    created_at          TIMESTAMPTZ NOT NULL,
    admitted_at         TIMESTAMPTZ NOT NULL,
    ended_at            TIMESTAMPTZ NOT NULL,
    outcome             TEXT NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'evicted', 'stopped')),
    reason              TEXT NOT NULL DEFAULT '',
    wait_seconds        DOUBLE PRECISION NOT NULL,
    allocated_gpu_hours DOUBLE PRECISION NOT NULL,
    avg_utilization     DOUBLE PRECISION,
    usd_per_hour        NUMERIC(12, 4) NOT NULL,
    cost_usd            NUMERIC(14, 4) NOT NULL,
    recorded_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cost_ledger_team_ended_idx ON cost_ledger (team, ended_at);
CREATE INDEX cost_ledger_team_admitted_idx ON cost_ledger (team, flavor, admitted_at);

-- +goose Down
DROP TABLE cost_ledger;
DROP TABLE gpu_prices;
