-- +goose Up
-- Each replica keeps every launch record (without its manifest) until it
-- changes: a record written or deleted is announced on gantry_changes as
-- 'launch:' followed by its namespace and name, so that every replica
-- reads that one record again. A TRUNCATE drops every copy ('launch:*').

-- +goose StatementBegin
CREATE FUNCTION gantry_announce_launch() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('gantry_changes', 'launch:*');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('gantry_changes', 'launch:' || OLD.namespace || '/' || OLD.name);
    ELSE
        IF TG_OP = 'UPDATE' AND (OLD.namespace, OLD.name) IS DISTINCT FROM (NEW.namespace, NEW.name) THEN
            PERFORM pg_notify('gantry_changes', 'launch:' || OLD.namespace || '/' || OLD.name);
        END IF;
        PERFORM pg_notify('gantry_changes', 'launch:' || NEW.namespace || '/' || NEW.name);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER launches_announce AFTER INSERT OR UPDATE OR DELETE ON launches
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_launch();
CREATE TRIGGER launches_announce_truncate AFTER TRUNCATE ON launches
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_launch();

-- +goose Down
DROP TRIGGER launches_announce_truncate ON launches;
DROP TRIGGER launches_announce ON launches;
DROP FUNCTION gantry_announce_launch();
