-- +goose Up
-- One counter that every change to the ledger bumps, so pages can keep the
-- figures they derive from the ledger until it changes, at the price of a
-- one-row read per page instead of reading thousands of rows.
CREATE TABLE cost_ledger_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO cost_ledger_version (id, version) VALUES (1, 0);

-- +goose StatementBegin
CREATE FUNCTION cost_ledger_bump_version() RETURNS trigger AS $$
BEGIN
    UPDATE cost_ledger_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER cost_ledger_version_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON cost_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION cost_ledger_bump_version();

-- +goose Down
DROP TRIGGER cost_ledger_version_bump ON cost_ledger;
DROP FUNCTION cost_ledger_bump_version();
DROP TABLE cost_ledger_version;
