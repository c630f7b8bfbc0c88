-- +goose Up
-- Each ledger row carries the ledger version its insert made (seq), and the
-- version row counts the changes that were not a new row (rewrites): the
-- pages' ledger figures then add the rows recorded since the version they
-- were summed at, instead of reading a team's month again at every ended
-- run (the 50,000-workload run's team page waited seconds for that read
-- while evictions ended runs every few seconds). An insert bumps the
-- version inside its transaction, holding the version row until it
-- commits, so the rows up to a version read are all committed: none with a
-- lower seq can appear later.
ALTER TABLE cost_ledger ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE cost_ledger_version ADD COLUMN rewrites BIGINT NOT NULL DEFAULT 0;
CREATE INDEX cost_ledger_seq_idx ON cost_ledger (seq);

DROP TRIGGER cost_ledger_version_bump ON cost_ledger;

-- +goose StatementBegin
CREATE FUNCTION cost_ledger_stamp_row() RETURNS trigger AS $$
BEGIN
    UPDATE cost_ledger_version SET version = version + 1 WHERE id = 1 RETURNING version INTO NEW.seq;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION cost_ledger_bump_rewrites() RETURNS trigger AS $$
BEGIN
    UPDATE cost_ledger_version SET version = version + 1, rewrites = rewrites + 1 WHERE id = 1;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER cost_ledger_row_stamp BEFORE INSERT ON cost_ledger
    FOR EACH ROW EXECUTE FUNCTION cost_ledger_stamp_row();
CREATE TRIGGER cost_ledger_rewrite_bump AFTER UPDATE OR DELETE OR TRUNCATE ON cost_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION cost_ledger_bump_rewrites();

-- +goose Down
DROP TRIGGER cost_ledger_rewrite_bump ON cost_ledger;
DROP TRIGGER cost_ledger_row_stamp ON cost_ledger;
DROP FUNCTION cost_ledger_bump_rewrites();
DROP FUNCTION cost_ledger_stamp_row();
CREATE TRIGGER cost_ledger_version_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cost_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION cost_ledger_bump_version();
DROP INDEX cost_ledger_seq_idx;
ALTER TABLE cost_ledger_version DROP COLUMN rewrites;
ALTER TABLE cost_ledger DROP COLUMN seq;
