-- +goose Up
-- A month's shared costs of a pool an admin enters (network, storage,
-- support, operations); each team carries a share by its GPU-hours there.
CREATE TABLE pool_shared_costs (
    month          DATE NOT NULL CHECK (extract(day FROM month) = 1),
    pool           TEXT NOT NULL,
    network_usd    NUMERIC(20, 6) NOT NULL DEFAULT 0 CHECK (network_usd >= 0),
    storage_usd    NUMERIC(20, 6) NOT NULL DEFAULT 0 CHECK (storage_usd >= 0),
    support_usd    NUMERIC(20, 6) NOT NULL DEFAULT 0 CHECK (support_usd >= 0),
    operations_usd NUMERIC(20, 6) NOT NULL DEFAULT 0 CHECK (operations_usd >= 0),
    set_by         TEXT NOT NULL,
    set_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (month, pool)
);

-- The alternative an admin compares the cluster with, from a month on:
-- renting GPUs by the hour, or a model API priced per million tokens.
CREATE TABLE cost_comparisons (
    month                       DATE PRIMARY KEY CHECK (extract(day FROM month) = 1),
    rental_usd_per_gpu_hour     NUMERIC(16, 6) CHECK (rental_usd_per_gpu_hour >= 0),
    api_usd_per_million_tokens  NUMERIC(16, 6) CHECK (api_usd_per_million_tokens >= 0),
    label                       TEXT NOT NULL DEFAULT '',
    set_by                      TEXT NOT NULL,
    set_at                      TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE cost_comparisons;
DROP TABLE pool_shared_costs;
