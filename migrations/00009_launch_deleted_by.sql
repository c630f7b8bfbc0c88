-- +goose Up
-- Who deleted a job, for its page ("deleted by alice"); NULL for jobs
-- deleted before this was kept, or whose objects vanished behind the portal.
ALTER TABLE launches ADD COLUMN deleted_by TEXT;

-- +goose Down
ALTER TABLE launches DROP COLUMN deleted_by;
