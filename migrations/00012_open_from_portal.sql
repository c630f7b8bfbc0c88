-- +goose Up
-- Notebooks the owner shared with their team (issue 14): a row means the
-- team may open it through the portal's proxy; no row, only the owner.
CREATE TABLE notebook_shares (
    team       TEXT NOT NULL,
    name       TEXT NOT NULL,
    shared_by  TEXT NOT NULL,
    shared_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (team, name)
);

-- Keys for calling an inference endpoint through /endpoints/{team}/{name}/.
-- Only the SHA-256 hash of the secret is kept; prefix is its non-secret head.
CREATE TABLE endpoint_keys (
    id           BIGSERIAL PRIMARY KEY,
    team         TEXT NOT NULL,
    name         TEXT NOT NULL,
    label        TEXT NOT NULL,
    hash         BYTEA NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ,
    revoked_by   TEXT
);
CREATE INDEX endpoint_keys_endpoint_idx ON endpoint_keys (team, name, created_at DESC);

-- +goose Down
DROP TABLE endpoint_keys;
DROP TABLE notebook_shares;
