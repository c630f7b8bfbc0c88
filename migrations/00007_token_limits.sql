-- +goose Up
-- A token can be read-only (GET requests only), and lives at most 90 days:
-- longer-lived tokens made before this limit end 90 days after creation.
ALTER TABLE api_tokens ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT false;
UPDATE api_tokens SET expires_at = created_at + interval '90 days'
WHERE expires_at > created_at + interval '90 days';
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_longest_life CHECK (expires_at <= created_at + interval '90 days');

-- +goose Down
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_longest_life;
ALTER TABLE api_tokens DROP COLUMN read_only;
