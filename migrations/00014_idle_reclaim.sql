-- +goose Up
-- Idle GPU reclaim: the admins' policy per template kind and team (team ''
-- is the default for every team), holds on single jobs (a lead's exemption
-- with its reason, or the owner's bounded "keep it running" extension),
-- and one row per idle episode of a job: warned, then stopped, scaled to
-- its minimum, flagged, or ended by renewed use. At most one open episode
-- per launch: a second leader's insert fails, so nothing is done or
-- audited twice.
CREATE TABLE idle_policies (
    team              TEXT NOT NULL DEFAULT '',
    kind              TEXT NOT NULL,
    threshold_percent DOUBLE PRECISION NOT NULL,
    window_seconds    INTEGER NOT NULL,
    grace_seconds     INTEGER NOT NULL,
    extension_seconds INTEGER NOT NULL,
    updated_by        TEXT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (team, kind)
);

CREATE TABLE idle_holds (
    launch_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    exempt    BOOLEAN NOT NULL,
    reason    TEXT NOT NULL,
    held_by   TEXT NOT NULL,
    held_at   TIMESTAMPTZ NOT NULL,
    -- NULL for an exemption: it holds until removed.
    until     TIMESTAMPTZ
);

CREATE TABLE idle_episodes (
    id                BIGSERIAL PRIMARY KEY,
    launch_id         TEXT NOT NULL,
    namespace         TEXT NOT NULL,
    name              TEXT NOT NULL,
    team              TEXT NOT NULL,
    kind              TEXT NOT NULL,
    owner             TEXT NOT NULL,
    threshold_percent DOUBLE PRECISION NOT NULL,
    window_seconds    INTEGER NOT NULL,
    idle_since        TIMESTAMPTZ NOT NULL,
    warned_at         TIMESTAMPTZ,
    act_after         TIMESTAMPTZ,
    -- '' while open and only warned; stopped, scaled, flagged; then
    -- closed as used again, kept running or exempted.
    action            TEXT NOT NULL DEFAULT '',
    acted_at          TIMESTAMPTZ,
    closed_at         TIMESTAMPTZ,
    close_reason      TEXT NOT NULL DEFAULT '',
    flavor            TEXT NOT NULL DEFAULT '',
    resource          TEXT NOT NULL DEFAULT '',
    gpus_freed        BIGINT NOT NULL DEFAULT 0,
    idle_gpu_hours    DOUBLE PRECISION NOT NULL DEFAULT 0,
    idle_cost_usd     NUMERIC(20, 6) NOT NULL DEFAULT 0,
    usd_per_hour      NUMERIC(16, 6) NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX idle_episodes_one_open ON idle_episodes (launch_id) WHERE closed_at IS NULL;
CREATE INDEX idle_episodes_by_job ON idle_episodes (namespace, name, id DESC);

-- +goose Down
DROP TABLE idle_episodes;
DROP TABLE idle_holds;
DROP TABLE idle_policies;
