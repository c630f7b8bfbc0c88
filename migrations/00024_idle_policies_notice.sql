-- +goose Up
-- The idle policies are read by every job page view (the idle card and
-- the GPU panel's idle mark) and by the reclaim loop each pass; replicas
-- keep them until this trigger announces a change.
CREATE TRIGGER idle_policies_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON idle_policies
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_change('idle_policies');

-- +goose Down
DROP TRIGGER idle_policies_announce ON idle_policies;
