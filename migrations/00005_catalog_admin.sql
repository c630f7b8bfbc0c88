-- +goose Up
-- A template version is a draft until an admin publishes it; researchers
-- launch the latest published version. Versions stored before this
-- migration and seeded from files are published (draft defaults to false).
ALTER TABLE templates ADD COLUMN draft BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE templates ADD COLUMN published_by TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN published_at TIMESTAMPTZ;
UPDATE templates SET published_at = created_at, published_by = created_by;
CREATE INDEX templates_published_idx ON templates (name, version DESC) WHERE NOT draft;

-- The image registry allowlist: one row, seeded from configuration on the
-- first start; from then on admins edit it and it is the truth.
CREATE TABLE image_allowlist (
    id          INTEGER PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    registries  JSONB NOT NULL,
    updated_by  TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE image_allowlist;
DROP INDEX templates_published_idx;
ALTER TABLE templates DROP COLUMN published_at;
ALTER TABLE templates DROP COLUMN published_by;
ALTER TABLE templates DROP COLUMN draft;
