-- +goose Up
-- Money is kept to the micro-dollar (cost integrates every price over a
-- run), and the measured part of a run is kept apart from its unmeasured
-- time, which is never counted as useful.
ALTER TABLE gpu_prices ALTER COLUMN usd_per_hour TYPE NUMERIC(16, 6);
ALTER TABLE cost_ledger ALTER COLUMN usd_per_hour TYPE NUMERIC(16, 6);
ALTER TABLE cost_ledger ALTER COLUMN cost_usd TYPE NUMERIC(20, 6);
ALTER TABLE cost_ledger ADD COLUMN measured_gpu_hours DOUBLE PRECISION;
ALTER TABLE cost_ledger ADD COLUMN useful_gpu_hours DOUBLE PRECISION;

-- +goose Down
ALTER TABLE cost_ledger DROP COLUMN useful_gpu_hours;
ALTER TABLE cost_ledger DROP COLUMN measured_gpu_hours;
ALTER TABLE cost_ledger ALTER COLUMN cost_usd TYPE NUMERIC(14, 4);
ALTER TABLE cost_ledger ALTER COLUMN usd_per_hour TYPE NUMERIC(12, 4);
ALTER TABLE gpu_prices ALTER COLUMN usd_per_hour TYPE NUMERIC(12, 4);
