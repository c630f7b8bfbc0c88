-- +goose Up
-- Every team page view shows the team's webhook and its latest deliveries;
-- replicas keep them until these triggers announce a change (a webhook
-- set or removed, a delivery queued, attempted, delivered or given up).
CREATE TRIGGER team_webhooks_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_webhooks
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('webhooks');
CREATE TRIGGER webhook_deliveries_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('webhooks');

-- +goose Down
DROP TRIGGER webhook_deliveries_announce ON webhook_deliveries;
DROP TRIGGER team_webhooks_announce ON team_webhooks;
