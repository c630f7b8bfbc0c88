-- +goose Up
-- Each replica keeps the rows a job's page shows (its ended runs, its
-- moments, its newest idle episode, its verdict) for every job with a live
-- launch record, until they change: a row of one of those tables written,
-- changed or removed is announced on gantry_changes as 'jobrows:' followed
-- by the job's namespace and name, so that every replica reads that job's
-- rows again. A TRUNCATE drops every copy ('jobrows:*'). The argument names
-- the table's column that holds the job's name.

-- +goose StatementBegin
CREATE FUNCTION gantry_announce_job_rows() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('gantry_changes', 'jobrows:*');
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('gantry_changes', 'jobrows:' || OLD.namespace || '/' || (to_jsonb(OLD) ->> TG_ARGV[0]));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('gantry_changes', 'jobrows:' || NEW.namespace || '/' || (to_jsonb(NEW) ->> TG_ARGV[0]));
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER cost_ledger_announce_job AFTER INSERT OR UPDATE OR DELETE ON cost_ledger
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_job_rows('job_name');
CREATE TRIGGER cost_ledger_announce_jobs AFTER TRUNCATE ON cost_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_job_rows();
CREATE TRIGGER job_moments_announce_job AFTER INSERT OR UPDATE OR DELETE ON job_moments
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_job_rows('job');
CREATE TRIGGER job_moments_announce_jobs AFTER TRUNCATE ON job_moments
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_job_rows();
CREATE TRIGGER idle_episodes_announce_job AFTER INSERT OR UPDATE OR DELETE ON idle_episodes
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_job_rows('name');
CREATE TRIGGER idle_episodes_announce_jobs AFTER TRUNCATE ON idle_episodes
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_job_rows();
CREATE TRIGGER run_verdicts_announce_job AFTER INSERT OR UPDATE OR DELETE ON run_verdicts
    FOR EACH ROW EXECUTE FUNCTION gantry_announce_job_rows('job_name');
CREATE TRIGGER run_verdicts_announce_jobs AFTER TRUNCATE ON run_verdicts
    FOR EACH STATEMENT EXECUTE FUNCTION gantry_announce_job_rows();

-- +goose Down
DROP TRIGGER run_verdicts_announce_jobs ON run_verdicts;
DROP TRIGGER run_verdicts_announce_job ON run_verdicts;
DROP TRIGGER idle_episodes_announce_jobs ON idle_episodes;
DROP TRIGGER idle_episodes_announce_job ON idle_episodes;
DROP TRIGGER job_moments_announce_jobs ON job_moments;
DROP TRIGGER job_moments_announce_job ON job_moments;
DROP TRIGGER cost_ledger_announce_jobs ON cost_ledger;
DROP TRIGGER cost_ledger_announce_job ON cost_ledger;
DROP FUNCTION gantry_announce_job_rows();
