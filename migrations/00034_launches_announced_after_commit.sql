-- +goose Up
-- A new launch record is announced by the replica that wrote it, a moment
-- after its commit, with the others it wrote meanwhile
-- (store.Changes.Announce), no longer by the insert's own transaction:
-- PostgreSQL commits the transactions that send a notice one at a time,
-- so with one notice per launch every launch waited on the launches
-- committing before it. A record marked deleted, or removed, is still
-- announced by its transaction.
DROP TRIGGER launches_announce ON launches;
CREATE TRIGGER launches_announce AFTER UPDATE OR DELETE ON launches
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_launch();

-- +goose Down
DROP TRIGGER launches_announce ON launches;
CREATE TRIGGER launches_announce AFTER INSERT OR UPDATE OR DELETE ON launches
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_launch();
