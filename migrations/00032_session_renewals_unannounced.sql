-- +goose Up
-- A used session's idle deadline is pushed back about once a minute by an
-- UPDATE of its expiry alone. The session itself (its data) is unchanged,
-- so the copies the replicas keep stay right: only an insert, a delete or
-- an update of a session's data or token is announced (migration 00027).
DROP TRIGGER sessions_announce ON sessions;
CREATE TRIGGER sessions_announce AFTER INSERT OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_session();
CREATE TRIGGER sessions_announce_change AFTER UPDATE ON sessions
    FOR EACH ROW WHEN (OLD.data IS DISTINCT FROM NEW.data OR OLD.token IS DISTINCT FROM NEW.token)
    EXECUTE FUNCTION gantry_announce_session();

-- +goose Down
DROP TRIGGER sessions_announce_change ON sessions;
DROP TRIGGER sessions_announce ON sessions;
CREATE TRIGGER sessions_announce AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_session();
