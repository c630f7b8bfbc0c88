-- +goose Up
-- A team's acceptance rule is read by every job page view (does the rule
-- accept this job's result?) and changes when a lead turns it on or off;
-- replicas keep it until this trigger announces a change.
CREATE TRIGGER team_acceptance_rules_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_acceptance_rules
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('acceptance_rules');

-- +goose Down
DROP TRIGGER team_acceptance_rules_announce ON team_acceptance_rules;
