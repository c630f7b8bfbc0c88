-- +goose Up
-- Accepted results: a person's verdict on a job's result, and a team's rule
-- that accepts its succeeded runs without one. Cost per accepted unit
-- divides a month's spend by these.
CREATE TABLE run_verdicts (
    namespace  TEXT NOT NULL,
    job_name   TEXT NOT NULL,
    team       TEXT NOT NULL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('accepted', 'rejected')),
    note       TEXT NOT NULL DEFAULT '',
    decided_by TEXT NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (namespace, job_name)
);
CREATE INDEX run_verdicts_team_idx ON run_verdicts (team);

-- The team's rule: succeeded runs that ended in [accept_from, accept_until)
-- count as accepted unless someone rejected them; accept_until is NULL
-- while the rule is on.
CREATE TABLE team_acceptance_rules (
    team         TEXT PRIMARY KEY,
    accept_from  TIMESTAMPTZ NOT NULL,
    accept_until TIMESTAMPTZ,
    set_by       TEXT NOT NULL,
    set_at       TIMESTAMPTZ NOT NULL
);

-- Why a failed or evicted run ended, as the job page says it
-- (queue.CauseKind: out-of-memory, exit-code, preempted, ...).
ALTER TABLE cost_ledger ADD COLUMN cause TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE cost_ledger DROP COLUMN cause;
DROP TABLE team_acceptance_rules;
DROP TABLE run_verdicts;
