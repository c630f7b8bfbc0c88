-- +goose Up
-- Each replica keeps small figures most pages show (the nav's badges, the
-- ledger's version, the prices) until the tables under them change,
-- instead of reading them on every view: these triggers announce each
-- change on the channel gantry_changes, with the table's topic as
-- payload, to every replica that listens. A notice is sent when its
-- transaction commits.

-- +goose StatementBegin
CREATE FUNCTION gantry_announce_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('gantry_changes', TG_ARGV[0]);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER notifications_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON notifications
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('notifications');
CREATE TRIGGER quota_requests_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_requests
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('quota_requests');
CREATE TRIGGER cost_ledger_version_announce AFTER UPDATE ON cost_ledger_version
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('ledger');
CREATE TRIGGER gpu_prices_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_prices
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('prices');

-- +goose Down
DROP TRIGGER gpu_prices_announce ON gpu_prices;
DROP TRIGGER cost_ledger_version_announce ON cost_ledger_version;
DROP TRIGGER quota_requests_announce ON quota_requests;
DROP TRIGGER notifications_announce ON notifications;
DROP FUNCTION gantry_announce_change();
