-- +goose Up
-- A pool's acceptance run as an admin defines it: what to launch, what the
-- workload pulls and for how long it trains, and the pass thresholds of the
-- guide's seven steps. One definition per pool (= Kueue ResourceFlavor).
CREATE TABLE acceptance_definitions (
    pool                         TEXT PRIMARY KEY,
    team                         TEXT NOT NULL,
    template                     TEXT NOT NULL,
    image                        TEXT NOT NULL,
    gpus                         INTEGER NOT NULL CHECK (gpus > 0),
    nodes                        INTEGER NOT NULL CHECK (nodes > 0),
    dataset                      TEXT NOT NULL DEFAULT '',
    weights                      TEXT NOT NULL DEFAULT '',
    training_window_seconds      INTEGER NOT NULL CHECK (training_window_seconds > 0),
    benchmark                    BOOLEAN NOT NULL,
    max_queue_wait_seconds       DOUBLE PRECISION NOT NULL CHECK (max_queue_wait_seconds > 0),
    max_data_pull_seconds        DOUBLE PRECISION NOT NULL CHECK (max_data_pull_seconds > 0),
    min_bus_bandwidth_gbps       DOUBLE PRECISION NOT NULL CHECK (min_bus_bandwidth_gbps >= 0),
    max_checkpoint_write_seconds DOUBLE PRECISION NOT NULL CHECK (max_checkpoint_write_seconds > 0),
    max_recovery_seconds         DOUBLE PRECISION NOT NULL CHECK (max_recovery_seconds > 0),
    min_samples_per_second       DOUBLE PRECISION NOT NULL CHECK (min_samples_per_second >= 0),
    baseline_label               TEXT NOT NULL,
    -- What a million training samples cost at the model-API or GPU-rental baseline.
    baseline_usd_per_million_samples NUMERIC(16, 6) NOT NULL CHECK (baseline_usd_per_million_samples > 0),
    min_baseline_ratio           DOUBLE PRECISION NOT NULL DEFAULT 1 CHECK (min_baseline_ratio >= 0),
    updated_by                   TEXT NOT NULL,
    updated_at                   TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE acceptance_definitions;
