-- +goose Up
-- Moments of a job's attempts, recorded by the leader as it sees them in the
-- informer caches: a pod started running, a pod failed or was lost with its
-- node, Kueue evicted or preempted the workload, the workload finished.
-- Kubernetes forgets (events expire, pods are replaced); these rows keep
-- every attempt, its cause and the time to recover from it. The key names
-- what was seen (pod or workload UID and, for evictions, when), so a
-- restarted or second leader writes each moment once.
CREATE TABLE job_moments (
    id          BIGSERIAL PRIMARY KEY,
    team        TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    job         TEXT NOT NULL,
    moment_key  TEXT NOT NULL,
    -- started: a pod of the job began running; ended: an attempt ended.
    kind        TEXT NOT NULL CHECK (kind IN ('started', 'ended')),
    at          TIMESTAMPTZ NOT NULL,
    -- For ended moments: failed, succeeded, preempted, evicted or pod-failed,
    -- the cause (queue.CauseKind) and its sentence.
    ending      TEXT NOT NULL DEFAULT '',
    cause       TEXT NOT NULL DEFAULT '',
    words       TEXT NOT NULL DEFAULT '',
    pod         TEXT NOT NULL DEFAULT '',
    node        TEXT NOT NULL DEFAULT '',
    -- The completion index of an Indexed Job's pod; NULL otherwise.
    pod_index   INT,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (namespace, job, moment_key)
);
CREATE INDEX job_moments_job_idx ON job_moments (namespace, job, at);
CREATE INDEX job_moments_team_idx ON job_moments (team, at);

-- +goose Down
DROP TABLE job_moments;
