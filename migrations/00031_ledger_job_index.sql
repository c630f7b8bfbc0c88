-- +goose Up
-- A job's page reads the job's ended runs (store.JobRuns: by namespace and
-- job name, oldest first). No index answered that, so every view of a job
-- page read the whole ledger: 25-635 ms a view in the 10,000-run load run,
-- the job page's whole tail, and more as the ledger grows.
CREATE INDEX cost_ledger_job_idx ON cost_ledger (namespace, job_name, ended_at);

-- +goose Down
DROP INDEX cost_ledger_job_idx;
