-- +goose Up
-- The holds on idle reclaim (exemptions and extensions, set by people) are
-- read by every job page view; replicas keep them all until this trigger
-- announces a change.
CREATE TRIGGER idle_holds_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON idle_holds
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('idle_holds');

-- +goose Down
DROP TRIGGER idle_holds_announce ON idle_holds;
