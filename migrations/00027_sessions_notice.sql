-- +goose Up
-- Each replica keeps the sessions it has read until they change: a row
-- written or deleted (a renewal, a sign-in, a sign-out, an expired session
-- swept) is announced on gantry_changes as 'session:' and the SHA-256 of
-- its token, so that every replica drops its copy of that one session and
-- no other. The token itself never leaves the database. A TRUNCATE drops
-- every copy ('session:*').

-- +goose StatementBegin
CREATE FUNCTION gantry_announce_session() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('gantry_changes', 'session:*');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('gantry_changes', 'session:' || encode(sha256(convert_to(OLD.token, 'UTF8')), 'hex'));
    ELSE
        PERFORM pg_notify('gantry_changes', 'session:' || encode(sha256(convert_to(NEW.token, 'UTF8')), 'hex'));
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER sessions_announce AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_session();
CREATE TRIGGER sessions_announce_truncate AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_session();

-- +goose Down
DROP TRIGGER sessions_announce_truncate ON sessions;
DROP TRIGGER sessions_announce ON sessions;
DROP FUNCTION gantry_announce_session();
