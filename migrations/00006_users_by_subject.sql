-- +goose Up
-- Accounts are keyed on the IdP's issuer and subject (sub), which OIDC
-- promises to be unique and stable; preferred_username is not, so it is
-- kept for display and impersonation only and two people sharing one stay
-- two rows.
ALTER TABLE users ADD COLUMN issuer TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN subject TEXT NOT NULL DEFAULT '';

-- Existing rows learn their subject from their latest login in the audit
-- log (a subject whose latest login was under another username goes to
-- that username only). Their issuer stays '' until that person next signs
-- in, when the row is claimed by issuer and subject (or, for a row whose
-- subject is unknown, by username, as it was keyed before).
UPDATE users u SET subject = s.subject
FROM (
    SELECT DISTINCT ON (subject) subject, actor
    FROM (
        SELECT DISTINCT ON (actor) actor, detail->>'subject' AS subject, at, id
        FROM audit_log
        WHERE action = 'login' AND coalesce(detail->>'subject', '') <> ''
        ORDER BY actor, at DESC, id DESC
    ) latest_per_user
    ORDER BY subject, at DESC, id DESC
) s
WHERE u.username = s.actor;

-- issuer '' marks a row not yet claimed since this migration.
ALTER TABLE users ADD CONSTRAINT users_subject_known CHECK (issuer = '' OR subject <> '');
CREATE UNIQUE INDEX users_issuer_subject_key ON users (issuer, subject) WHERE issuer <> '';

-- Tokens belong to a user row, not to a username.
ALTER TABLE api_tokens ADD COLUMN user_id BIGINT REFERENCES users (id) ON DELETE CASCADE;
UPDATE api_tokens t SET user_id = u.id FROM users u WHERE u.username = t.username;
ALTER TABLE api_tokens ALTER COLUMN user_id SET NOT NULL;
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_username_fkey;
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at DESC);

ALTER TABLE users DROP CONSTRAINT users_username_key;
CREATE INDEX users_username_idx ON users (username);

-- +goose Down
DROP INDEX users_username_idx;
ALTER TABLE users ADD CONSTRAINT users_username_key UNIQUE (username);
DROP INDEX api_tokens_user_idx;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_username_fkey FOREIGN KEY (username) REFERENCES users (username) ON DELETE CASCADE;
ALTER TABLE api_tokens DROP COLUMN user_id;
DROP INDEX users_issuer_subject_key;
ALTER TABLE users DROP CONSTRAINT users_subject_known;
ALTER TABLE users DROP COLUMN subject;
ALTER TABLE users DROP COLUMN issuer;
