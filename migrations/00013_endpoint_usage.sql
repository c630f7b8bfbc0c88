-- +goose Up
-- Requests and tokens each inference endpoint served, per hour, counted by
-- the portal's proxy (tokens from the responses' OpenAI-style usage when
-- present). Read by cost per accepted unit (served requests or tokens).
CREATE TABLE endpoint_usage_hourly (
    team              TEXT NOT NULL,
    name              TEXT NOT NULL,
    hour              TIMESTAMPTZ NOT NULL,
    requests          BIGINT NOT NULL DEFAULT 0,
    errors            BIGINT NOT NULL DEFAULT 0,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (team, name, hour)
);

-- +goose Down
DROP TABLE endpoint_usage_hourly;
