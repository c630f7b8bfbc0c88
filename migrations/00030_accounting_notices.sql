-- +goose Up
-- A team's cost per accepted unit and a job's result read, besides the
-- ledger and the acceptance rules (announced already), the verdicts, the
-- shared costs and comparisons, the endpoints' hourly usage and the idle
-- reclaims. Replicas keep those figures until one of these tables
-- changes, instead of computing them again every few seconds in case
-- another replica changed one.
CREATE TRIGGER run_verdicts_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON run_verdicts
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('verdicts');
CREATE TRIGGER pool_shared_costs_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pool_shared_costs
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('shared_costs');
CREATE TRIGGER cost_comparisons_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cost_comparisons
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('shared_costs');
CREATE TRIGGER endpoint_usage_hourly_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON endpoint_usage_hourly
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('endpoint_usage');
CREATE TRIGGER idle_episodes_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON idle_episodes
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('idle_episodes');

-- +goose Down
DROP TRIGGER idle_episodes_announce ON idle_episodes;
DROP TRIGGER endpoint_usage_hourly_announce ON endpoint_usage_hourly;
DROP TRIGGER cost_comparisons_announce ON cost_comparisons;
DROP TRIGGER pool_shared_costs_announce ON pool_shared_costs;
DROP TRIGGER run_verdicts_announce ON run_verdicts;
