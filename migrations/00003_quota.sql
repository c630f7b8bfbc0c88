-- +goose Up
-- Ceilings: up to this nominal quota a team lead may approve requests for
-- their team; above it only an admin may.
CREATE TABLE team_ceilings (
    team       TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    flavor     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    ceiling    BIGINT NOT NULL CHECK (ceiling >= 0),
    updated_by TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (team, flavor, resource)
);

CREATE TABLE quota_requests (
    id               BIGSERIAL PRIMARY KEY,
    team             TEXT NOT NULL REFERENCES teams (name),
    flavor           TEXT NOT NULL,
    resource         TEXT NOT NULL,
    delta            BIGINT NOT NULL CHECK (delta <> 0),
    until            TIMESTAMPTZ,
    reason           TEXT NOT NULL,
    requester        TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'approved', 'rejected', 'withdrawn')),
    decided_by       TEXT NOT NULL DEFAULT '',
    decided_at       TIMESTAMPTZ,
    decision_comment TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX quota_requests_team_status_idx ON quota_requests (team, status, created_at);
CREATE INDEX quota_requests_requester_idx ON quota_requests (requester, created_at DESC);

-- A grant is an approved delta applied to a ClusterQueue's nominal quota.
-- Reverting subtracts the delta again, so concurrent grants compose.
CREATE TABLE quota_grants (
    id            BIGSERIAL PRIMARY KEY,
    request_id    BIGINT NOT NULL UNIQUE REFERENCES quota_requests (id),
    team          TEXT NOT NULL,
    cluster_queue TEXT NOT NULL,
    flavor        TEXT NOT NULL,
    resource      TEXT NOT NULL,
    delta         BIGINT NOT NULL,
    applied_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ,
    reverted_at   TIMESTAMPTZ
);
CREATE INDEX quota_grants_due_idx ON quota_grants (expires_at) WHERE reverted_at IS NULL AND expires_at IS NOT NULL;
CREATE INDEX quota_grants_team_idx ON quota_grants (team, applied_at DESC);

CREATE TABLE notifications (
    id         BIGSERIAL PRIMARY KEY,
    username   TEXT NOT NULL,
    text       TEXT NOT NULL,
    link       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    read_at    TIMESTAMPTZ
);
CREATE INDEX notifications_user_idx ON notifications (username, created_at DESC);
CREATE INDEX notifications_unread_idx ON notifications (username) WHERE read_at IS NULL;

-- Audit entries of quota and team actions name their team in detail.team.
CREATE INDEX audit_log_team_idx ON audit_log ((detail ->> 'team'), at DESC);

-- +goose Down
DROP INDEX audit_log_team_idx;
DROP TABLE notifications;
DROP TABLE quota_grants;
DROP TABLE quota_requests;
DROP TABLE team_ceilings;
