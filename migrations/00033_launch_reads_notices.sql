-- +goose Up
-- Every launch and API call reads the caller's token and its owner, the
-- teams, the template and the image allowlist; replicas keep them until
-- these triggers announce a change. A token's last use (written about once
-- a minute while it is used) changes nothing a request checks, so an
-- update of it alone is not announced.
CREATE TRIGGER api_tokens_announce AFTER INSERT OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_change('api_tokens');
CREATE TRIGGER api_tokens_announce_change AFTER UPDATE ON api_tokens
    FOR EACH ROW WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
    EXECUTE FUNCTION gantry_announce_change('api_tokens');
CREATE TRIGGER api_tokens_announce_truncate AFTER TRUNCATE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('api_tokens');
CREATE TRIGGER users_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('api_tokens');
CREATE TRIGGER teams_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON teams
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('teams');
CREATE TRIGGER templates_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON templates
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('templates');
CREATE TRIGGER image_allowlist_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON image_allowlist
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('image_allowlist');

-- +goose Down
DROP TRIGGER image_allowlist_announce ON image_allowlist;
DROP TRIGGER templates_announce ON templates;
DROP TRIGGER teams_announce ON teams;
DROP TRIGGER users_announce ON users;
DROP TRIGGER api_tokens_announce_truncate ON api_tokens;
DROP TRIGGER api_tokens_announce_change ON api_tokens;
DROP TRIGGER api_tokens_announce ON api_tokens;
