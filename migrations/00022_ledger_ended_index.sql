-- +goose Up
-- Pool hours per month sum every team's runs that ended in a range: an
-- index on when runs ended, carrying what is summed, answers that without
-- reading the ledger's rows.
CREATE INDEX cost_ledger_ended_idx ON cost_ledger (ended_at) INCLUDE (flavor, allocated_gpu_hours);

-- +goose Down
DROP INDEX cost_ledger_ended_idx;
