package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unique"

	"gorm.io/gorm"
)

// JobRowNotices starts the notices of migration 00036: a job's ended runs,
// moments, idle episodes or verdict changed. It is followed by the job's
// namespace, "/" and its name ("*" for every job).
const JobRowNotices = "jobrows:"

// maxKeptJobs bounds the jobs whose rows a replica keeps: those of the
// newest live launch records, and of the jobs viewed since, up to it.
const maxKeptJobs = 50_000

// keptJobs keeps, in memory, the rows a job's page reads of the job
// (ReadJobTogether: its ended runs, its moments, its newest idle episode,
// its verdict; not its manifest, which the page links to) for every job
// with a live launch record, while the database's notices are heard
// (KeptByName). Read from PostgreSQL on every view, those rows were the
// job page's one round trip there: on two cores beside a busy API server,
// its slowest views (143-312 ms in the 53rd load run) each waited for
// PostgreSQL's processes to get a core, and set the page's p99.
//
// A job's rows are written by the portal's loops (moments, the ledger, the
// idle reclaim) and by its users (verdicts, holds); every write is
// announced by its transaction (migration 00036) to every replica, which
// reads that job's rows again in the background a moment later
// (KeptByName.Refresh), or on its next view if that comes first. This
// replica's own writes take effect on its next view, before the notice
// comes (forget); another replica's a moment after their commit, when the
// notice comes.
//
// A job not kept (launched since, made outside the portal, or ended and
// deleted) is read from PostgreSQL on its first view and kept from then on.
type keptJobs struct {
	*KeptByName[*keptJob]
}

// keptJob is one job's rows as kept (keepJob): the newest idle episode and
// the verdict by pointer, the moments without the job's namespace and name
// (its key's), the names that thousands of rows repeat shared. Jobs without
// rows share noJobRows. At 10,000 workloads, most of them with one moment,
// the kept rows were 5 MiB of the heap with each job's moments as read.
type keptJob struct {
	runs    []LedgerRow
	moments []keptMoment
	episode *IdleEpisode
	verdict *RunVerdict
}

// keptMoment is a JobMoment without its namespace and job.
// TestKeptJobRowsCarryEveryField fails when a new field of JobMoment is not
// carried.
type keptMoment struct {
	ID                              int64
	Team, MomentKey, Kind           string
	At                              time.Time
	Ending, Cause, Words, Pod, Node string
	PodIndex                        *int
	RecordedAt                      time.Time
}

var noJobRows = &keptJob{}

// KeepJobRows has the store keep the rows every job's page reads of its
// job while changes listens (keptJobs); Run reads them. It is to be called
// before the store is used.
func (s *Store) KeepJobRows(changes *Changes, log *slog.Logger) *JobRowsKeeper {
	k := &keptJobs{NewKeptByName[*keptJob](changes, JobRowNotices, maxKeptJobs)}
	s.jobs = k
	return &JobRowsKeeper{store: s, kept: k, log: log}
}

// JobRowsKeeper reads every kept job's rows (Run).
type JobRowsKeeper struct {
	store *Store
	kept  *keptJobs
	log   *slog.Logger
}

// forget has the next view read the named job's rows from PostgreSQL.
func (k *keptJobs) forget(namespace, name string) {
	if k == nil {
		return
	}
	k.Forget(WorkloadName{Namespace: namespace, Name: name})
}

// rows fills r with its job's rows: the kept ones when they may be
// answered, else those read reads from PostgreSQL, kept unless the job was
// announced (or every job read) meanwhile.
func (k *keptJobs) rows(ctx context.Context, r *jobRows, read func(context.Context, *jobRows) error) error {
	n := WorkloadName{Namespace: r.namespace, Name: r.job}
	j, found, _, look := k.Lookup(n)
	if found {
		j.fill(r, n)
		return nil
	}
	if err := read(ctx, r); err != nil || !look.Keeps() {
		return err
	}
	k.Keep(look, keptJobName(n), keepJob(r), true)
	return nil
}

// fill gives r copies of the kept rows of the job named n: a view may
// change what it reads.
func (j *keptJob) fill(r *jobRows, n WorkloadName) {
	r.runs = slices.Clone(j.runs)
	r.moments = nil
	if len(j.moments) > 0 {
		r.moments = make([]JobMoment, len(j.moments))
		for i, m := range j.moments {
			r.moments[i] = JobMoment{ID: m.ID, Team: m.Team, Namespace: n.Namespace, Job: n.Name, MomentKey: m.MomentKey, Kind: m.Kind,
				At: m.At, Ending: m.Ending, Cause: m.Cause, Words: m.Words, Pod: m.Pod, Node: m.Node, PodIndex: m.PodIndex, RecordedAt: m.RecordedAt}
		}
	}
	r.episodes, r.verdicts = nil, nil
	if j.episode != nil {
		r.episodes = []IdleEpisode{*j.episode}
	}
	if j.verdict != nil {
		r.verdicts = []RunVerdict{*j.verdict}
	}
}

// Run reads every kept job's rows whenever the replica listens under a
// connection it has not read them under, and every keptByNameReload, and
// a job's rows again a moment after a notice said they changed
// (KeptByName.Refresh), until ctx ends.
func (j *JobRowsKeeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		j.kept.Refresh(ctx, j.store.someJobsRows, j.log, "reading again the rows of jobs just changed")
	})
	j.kept.Run(ctx, j.read, j.log, "reading the rows of every job")
	wg.Wait()
}

// Load reads the rows of the jobs of the newest maxKeptJobs live launch
// records and keeps them, but those announced while it read; it keeps
// nothing unless the replica listened under one connection throughout.
func (j *JobRowsKeeper) Load(ctx context.Context) error {
	return j.kept.Load(ctx, j.read)
}

// read is every kept job's rows; never complete: a job launched since is
// read on its first view.
func (j *JobRowsKeeper) read(ctx context.Context) (map[WorkloadName]*keptJob, bool, error) {
	byJob, err := j.store.everyJobsRows(ctx)
	return byJob, false, err
}

// keptJobsSQL are the statements Load reads every kept job's rows with,
// after one of the two definitions of the jobs read: the jobs of the
// newest live launch records (keptJobsCTE), or the jobs named
// (namedJobsCTE, a JSON array of {"namespace", "name"}); then each table's
// rows of those jobs, in the order (and, for the idle episode and the
// verdict, the number) the job page's own statements read them
// (jobRowsBatch).
const (
	keptJobsCTE  = `WITH jobs AS (SELECT namespace, name FROM launches WHERE deleted_at IS NULL ORDER BY id DESC LIMIT ?) `
	namedJobsCTE = `WITH jobs AS (SELECT DISTINCT namespace, name FROM jsonb_to_recordset(?::jsonb) AS j(namespace text, name text)) `
	keptJobsSQL  = `SELECT namespace, name FROM jobs`
	keptRunsSQL  = `SELECT c.* FROM cost_ledger c JOIN jobs j ON c.namespace = j.namespace AND c.job_name = j.name
		ORDER BY c.namespace, c.job_name, c.ended_at`
	keptMomentsSQL = `SELECT m.* FROM job_moments m JOIN jobs j ON m.namespace = j.namespace AND m.job = j.name
		ORDER BY m.namespace, m.job, m.at, m.id`
	keptEpisodesSQL = `SELECT DISTINCT ON (e.namespace, e.name) e.* FROM idle_episodes e
		JOIN jobs j ON e.namespace = j.namespace AND e.name = j.name ORDER BY e.namespace, e.name, e.id DESC`
	keptVerdictsSQL = `SELECT v.* FROM run_verdicts v JOIN jobs j ON v.namespace = j.namespace AND v.job_name = j.name`
)

// everyJobsRows reads the rows of the jobs of the newest maxKeptJobs live
// launch records, as of one moment.
func (s *Store) everyJobsRows(ctx context.Context) (map[WorkloadName]*keptJob, error) {
	byJob, err := s.jobsRows(ctx, keptJobsCTE, maxKeptJobs)
	if err != nil {
		return nil, fmt.Errorf("read the rows of every job: %w", err)
	}
	return byJob, nil
}

// someJobsRows reads the rows of the named jobs, as of one moment: every
// one of them is in the answer, noJobRows for those without rows.
func (s *Store) someJobsRows(ctx context.Context, names []WorkloadName) (map[WorkloadName]*keptJob, error) {
	type named struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	list := make([]named, len(names))
	for i, n := range names {
		list[i] = named(n)
	}
	arg, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("name %d jobs: %w", len(names), err)
	}
	byJob, err := s.jobsRows(ctx, namedJobsCTE, string(arg))
	if err != nil {
		return nil, fmt.Errorf("read the rows of %d jobs: %w", len(names), err)
	}
	return byJob, nil
}

// jobsRows reads the rows of the jobs cte defines with arg, in one
// read-only transaction.
func (s *Store) jobsRows(ctx context.Context, cte string, arg any) (map[WorkloadName]*keptJob, error) {
	var (
		jobs     []WorkloadName
		runs     []LedgerRow
		moments  []JobMoment
		episodes []IdleEpisode
		verdicts []RunVerdict
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, q := range []struct {
			sql  string
			into any
		}{{keptJobsSQL, &jobs}, {keptRunsSQL, &runs}, {keptMomentsSQL, &moments}, {keptEpisodesSQL, &episodes}, {keptVerdictsSQL, &verdicts}} {
			if err := tx.Raw(cte+q.sql, arg).Scan(q.into).Error; err != nil {
				return err
			}
		}
		return nil
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	of := make(map[WorkloadName]*jobRows)
	job := func(namespace, name string) *jobRows {
		n := WorkloadName{Namespace: namespace, Name: name}
		r := of[n]
		if r == nil {
			r = &jobRows{namespace: namespace, job: name}
			of[n] = r
		}
		return r
	}
	for _, x := range runs {
		r := job(x.Namespace, x.JobName)
		r.runs = append(r.runs, x)
	}
	for _, m := range moments {
		r := job(m.Namespace, m.Job)
		r.moments = append(r.moments, m)
	}
	for _, e := range episodes {
		r := job(e.Namespace, e.Name)
		r.episodes = append(r.episodes, e)
	}
	for _, v := range verdicts {
		r := job(v.Namespace, v.JobName)
		r.verdicts = append(r.verdicts, v)
	}
	out := make(map[WorkloadName]*keptJob, len(jobs))
	for _, n := range jobs {
		if r := of[n]; r != nil {
			out[keptJobName(n)] = keepJob(r)
		} else {
			out[keptJobName(n)] = noJobRows
		}
	}
	return out, nil
}

// keptJobName is a job's key, its namespace shared with the other jobs'.
func keptJobName(n WorkloadName) WorkloadName {
	return WorkloadName{Namespace: sharedName(n.Namespace), Name: n.Name}
}

// sharedName is the one copy of s that the kept rows' equal names share.
func sharedName(s string) string { return unique.Make(s).Value() }

// keepJob is the kept copy of the job rows r read: noJobRows when there
// are none, with the names its rows repeat shared otherwise.
func keepJob(r *jobRows) *keptJob {
	runs, moments, episodes, verdicts := r.runs, r.moments, r.episodes, r.verdicts
	if len(runs) == 0 && len(moments) == 0 && len(episodes) == 0 && len(verdicts) == 0 {
		return noJobRows
	}
	j := &keptJob{runs: slices.Clone(runs)}
	for i := range j.runs {
		r := &j.runs[i]
		r.shareNames()
		r.JobName = sharedName(r.JobName) // the job's runs repeat it
	}
	if len(moments) > 0 {
		j.moments = make([]keptMoment, len(moments))
		for i, m := range moments {
			j.moments[i] = keptMoment{ID: m.ID, Team: sharedName(m.Team), MomentKey: m.MomentKey, Kind: sharedName(m.Kind), At: m.At,
				Ending: sharedName(m.Ending), Cause: sharedName(m.Cause), Words: sharedName(m.Words), Pod: m.Pod, Node: sharedName(m.Node),
				PodIndex: m.PodIndex, RecordedAt: m.RecordedAt}
		}
	}
	if len(episodes) > 0 {
		e := episodes[0]
		j.episode = &e
	}
	if len(verdicts) > 0 {
		v := verdicts[0]
		j.verdict = &v
	}
	return j
}
