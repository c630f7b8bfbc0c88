package launch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/gantry-dev/gantry/internal/store"
)

// maxKeptRecords bounds the launch records a replica keeps (a few hundred
// bytes each without their manifests). Past it only the newest are kept,
// and a name not among them is read from PostgreSQL.
const maxKeptRecords = 50_000

// keptRecordsReload is how often a replica reads every record again, and
// keptRecordsMaxAge how long it answers from a copy it could not read
// again: should a change notice be lost without the listening connection
// noticing, a stale record lives at most that long.
const (
	keptRecordsReload = 5 * time.Minute
	keptRecordsMaxAge = 2 * keptRecordsReload
)

// keptRecordsRetry is the pause after a failed read of every record.
const keptRecordsRetry = 10 * time.Second

// RecordStore is what KeptRecords reads and writes: the launch service's
// store, every record at once, the records not deleted, one record's
// manifest, and which of many workloads have a record.
type RecordStore interface {
	Store
	Launched
	RecentLaunches(ctx context.Context, limit int) ([]store.Launch, error)
	LiveLaunches(ctx context.Context) ([]store.Launch, error)
	LaunchManifest(ctx context.Context, namespace, name string) (string, error)
}

// KeptRecords keeps every launch record, without its manifest, in memory
// while the database's change notices are heard (store.Changes), so that a
// job's page, its status refresh and its API answer read no record from
// PostgreSQL before they can start their own reads. A record is written
// twice at most (its launch, its deletion); each write is announced to
// every replica, which reads that record again on its next view: a
// deletion by its transaction (migration 00029), a launch by the replica
// that made it, a moment after its commit (store.Changes.Announce; one
// made by a replica that dies before it announces it is heard of when it
// is retried, when a replica starts, or at the next full read, within
// keptRecordsReload). Writes made through this replica take effect on
// its next view, before the notice comes (a launch it announces is not
// heard back, so the copy that view reads is kept); those of another
// replica a moment after their commit, when the notice comes (a view of a job
// launched there within that moment finds no record, as for every kept
// figure).
//
// Records are read all at once when the replica starts listening (and
// again after it lost its connection, and every keptRecordsReload); until
// then, and whenever it does not listen, every view reads PostgreSQL.
// LaunchByName answers records without their manifests, kept or not;
// LaunchManifest reads one.
type KeptRecords struct {
	RecordStore
	changes *store.Changes
	log     *slog.Logger

	mu sync.Mutex
	// byName is every record, read under connection at loadedAt, but
	// those in unknown: announced since (the drops count then), to be
	// read again. loads counts the times they were all read.
	byName     map[store.WorkloadName]*keptRecord
	unknown    map[store.WorkloadName]uint64
	complete   bool // no record was left out for maxKeptRecords
	loaded     bool
	connection uint64
	loadedAt   time.Time
	loads      uint64
	// drops counts the records announced: a record read while its own
	// is announced is not kept.
	drops uint64
	// heardWhileLoading collects what is announced while every record is
	// being read; nil when none is.
	heardWhileLoading *heardNames
}

type heardNames struct {
	names map[store.WorkloadName]uint64
	all   bool
}

// NewKeptRecords keeps next's records while changes listens; Run reads
// them.
func NewKeptRecords(next RecordStore, changes *store.Changes, log *slog.Logger) *KeptRecords {
	k := &KeptRecords{RecordStore: next, changes: changes, log: log}
	changes.Follow(store.LaunchNotices, k.heard)
	return k
}

// heard forgets the record a notice names ("*": every record).
func (k *KeptRecords) heard(rest string) {
	if rest == "*" {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.loads++
		k.byName, k.unknown, k.loaded = nil, nil, false
		if k.heardWhileLoading != nil {
			k.heardWhileLoading.all = true
		}
		return
	}
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok {
		return
	}
	k.forget(store.WorkloadName{Namespace: namespace, Name: name})
}

// forget has the next view read the record named n from PostgreSQL.
func (k *KeptRecords) forget(n store.WorkloadName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drops++
	delete(k.byName, n)
	if k.unknown != nil {
		k.unknown[n] = k.drops
	}
	if k.heardWhileLoading != nil {
		k.heardWhileLoading.names[n] = k.drops
	}
}

// answersLocked reports whether the kept records may be answered now.
func (k *KeptRecords) answersLocked(now time.Time) bool {
	connection, live := k.changes.Listening()
	return live && k.loaded && connection == k.connection && now.Sub(k.loadedAt) < keptRecordsMaxAge
}

// lookupLocked is what memory says of the record named n, when the kept
// records may be answered: known is false when it cannot say (a record
// announced since, or left out for maxKeptRecords), and found whether n
// has a record.
func (k *KeptRecords) lookupLocked(n store.WorkloadName, answers bool) (rec store.Launch, found, known bool) {
	if !answers {
		return store.Launch{}, false, false
	}
	if rec, ok := k.byName[n]; ok {
		return rec.launch(n), true, true
	}
	_, unknown := k.unknown[n]
	return store.Launch{}, false, k.complete && !unknown
}

// LaunchByName returns the named record without its manifest: the kept
// copy when one may be answered, else read from PostgreSQL.
func (k *KeptRecords) LaunchByName(ctx context.Context, namespace, name string) (store.Launch, error) {
	n := store.WorkloadName{Namespace: namespace, Name: name}
	k.mu.Lock()
	answers := k.answersLocked(time.Now())
	if rec, found, known := k.lookupLocked(n, answers); known {
		k.mu.Unlock()
		if !found {
			return store.Launch{}, fmt.Errorf("get launch %s/%s: %w", namespace, name, store.ErrNotFound)
		}
		return rec, nil
	}
	seq, wasUnknown := k.unknown[n]
	loads := k.loads
	k.mu.Unlock()

	rec, err := k.RecordStore.LaunchByName(ctx, namespace, name)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Launch{}, err
	}
	rec.Manifest = ""
	if answers {
		k.mu.Lock()
		// Kept unless its record was announced (or all were read) meanwhile.
		now, isUnknown := k.unknown[n]
		if k.loads == loads && isUnknown == wasUnknown && now == seq && k.answersLocked(time.Now()) {
			delete(k.unknown, n)
			if found && len(k.byName) < maxKeptRecords {
				k.byName[keptName(namespace, name)] = keepRecord(rec)
			}
		}
		k.mu.Unlock()
	}
	return rec, err
}

// Launched reports which of names have a launch record: from memory for
// the names kept or known to have none, the rest in one query.
func (k *KeptRecords) Launched(ctx context.Context, names []store.WorkloadName) (map[store.WorkloadName]bool, error) {
	out := make(map[store.WorkloadName]bool, len(names))
	var ask []store.WorkloadName
	k.mu.Lock()
	answers := k.answersLocked(time.Now())
	for _, n := range names {
		if _, found, known := k.lookupLocked(n, answers); known {
			if found {
				out[n] = true
			}
			continue
		}
		ask = append(ask, n)
	}
	k.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	known, err := k.RecordStore.Launched(ctx, ask)
	if err != nil {
		return nil, err
	}
	for n, ok := range known {
		out[n] = ok
	}
	return out, nil
}

// maxUnknownLive bounds the records announced since the last full read
// that LiveLaunches reads one by one; past it, it reads them all.
const maxUnknownLive = 100

// LiveLaunches returns the records not deleted through the portal, oldest
// first, as the idle loop reads them on each pass: from memory, with the
// few announced since they were all read read again one by one.
func (k *KeptRecords) LiveLaunches(ctx context.Context) ([]store.Launch, error) {
	k.mu.Lock()
	if !k.answersLocked(time.Now()) || !k.complete || len(k.unknown) > maxUnknownLive {
		k.mu.Unlock()
		return k.RecordStore.LiveLaunches(ctx)
	}
	out := make([]store.Launch, 0, len(k.byName))
	for n, rec := range k.byName {
		if rec.DeletedAt == nil {
			out = append(out, rec.launch(n))
		}
	}
	unknown := make([]store.WorkloadName, 0, len(k.unknown))
	for n := range k.unknown {
		unknown = append(unknown, n)
	}
	k.mu.Unlock()
	for _, n := range unknown {
		rec, err := k.LaunchByName(ctx, n.Namespace, n.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		case rec.DeletedAt == nil:
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b store.Launch) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// RecordLaunchAudited records a launch; this replica's next view of it
// reads it, and every replica's once it hears it announced. A launch
// already recorded (a retry) is announced again: the replica that
// recorded it may have died before it announced it.
func (k *KeptRecords) RecordLaunchAudited(ctx context.Context, l store.Launch, e *store.AuditEntry) (store.Launch, error) {
	rec, err := k.RecordStore.RecordLaunchAudited(ctx, l, e)
	k.forget(store.WorkloadName{Namespace: l.Namespace, Name: l.Name})
	if err == nil || errors.Is(err, store.ErrDuplicateLaunch) {
		k.changes.Announce(store.LaunchNotices + rec.Namespace + "/" + rec.Name)
	}
	return rec, err
}

// MarkLaunchDeleted notes a deletion; this replica's next view of the
// record reads it.
func (k *KeptRecords) MarkLaunchDeleted(ctx context.Context, namespace, name, by string, at time.Time) error {
	err := k.RecordStore.MarkLaunchDeleted(ctx, namespace, name, by, at)
	k.forget(store.WorkloadName{Namespace: namespace, Name: name})
	return err
}

// Run reads every record whenever the replica listens under a connection
// it has not read them under, and every keptRecordsReload, until ctx ends.
// It first has every replica read every record again: a replica that
// died between a launch's commit and its announcement (its restart is
// this one, often) left that record unheard of.
func (k *KeptRecords) Run(ctx context.Context) {
	k.changes.Announce(store.LaunchNotices + "*")
	due := func(connection uint64, now time.Time) bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return !k.loaded || k.connection != connection || now.Sub(k.loadedAt) >= keptRecordsReload
	}
	k.changes.ReadWhileListening(ctx, due, k.Load, keptRecordsRetry, func(err error) {
		k.log.WarnContext(ctx, "reading every launch record", "err", err)
	})
}

// Load reads every record (the newest maxKeptRecords) and keeps them,
// but those announced while it read; it keeps nothing unless the replica
// listened under one connection throughout.
func (k *KeptRecords) Load(ctx context.Context) error {
	connection, live := k.changes.Listening()
	if !live {
		return nil
	}
	heard := &heardNames{names: map[store.WorkloadName]uint64{}}
	k.mu.Lock()
	k.heardWhileLoading = heard
	k.mu.Unlock()
	readAt := time.Now()
	recs, err := k.RecordStore.RecentLaunches(ctx, maxKeptRecords+1)

	k.mu.Lock()
	defer k.mu.Unlock()
	k.heardWhileLoading = nil
	if err != nil {
		return err
	}
	if now, live := k.changes.Listening(); !live || now != connection || heard.all {
		return nil
	}
	byName := make(map[store.WorkloadName]*keptRecord, min(len(recs), maxKeptRecords))
	for _, rec := range recs[:min(len(recs), maxKeptRecords)] {
		byName[keptName(rec.Namespace, rec.Name)] = keepRecord(rec)
	}
	for n := range heard.names {
		delete(byName, n)
	}
	k.byName, k.unknown, k.complete = byName, heard.names, len(recs) <= maxKeptRecords
	k.loaded, k.connection, k.loadedAt = true, connection, readAt
	k.loads++
	return nil
}

// keptRecord is a record as kept: without its manifest, without the
// namespace and name its key holds, with the names that thousands of
// records repeat (team, kind, template, owner) shared, and by pointer. A
// store.Launch by value in the map cost 281 bytes a slot, in a table sized
// to the next power of two: 4.6 MiB for 10,000 records (the load run's heap
// profile). TestKeptRecordKeepsEveryFieldButTheManifest fails when a new
// field of store.Launch is not carried.
type keptRecord struct {
	ID                                    int64
	LaunchID, Team, Kind, Template, Owner string
	TemplateVersion                       int
	Parameters                            json.RawMessage
	Objects                               store.StringList
	CreatedAt                             time.Time
	DeletedAt                             *time.Time
	DeletedBy                             *string
}

// keptName is a record's key, its namespace shared with the other records'.
func keptName(namespace, name string) store.WorkloadName {
	return store.WorkloadName{Namespace: shared(namespace), Name: name}
}

// shared is the one copy of s that the kept records' equal names share.
func shared(s string) string { return unique.Make(s).Value() }

func keepRecord(rec store.Launch) *keptRecord {
	return &keptRecord{ID: rec.ID, LaunchID: rec.LaunchID, Team: shared(rec.Team), Kind: shared(rec.Kind),
		Template: shared(rec.Template), Owner: shared(rec.Owner), TemplateVersion: rec.TemplateVersion,
		Parameters: rec.Parameters, Objects: rec.Objects, CreatedAt: rec.CreatedAt, DeletedAt: rec.DeletedAt, DeletedBy: rec.DeletedBy}
}

// launch is the kept record of the workload named n, without its manifest.
func (r *keptRecord) launch(n store.WorkloadName) store.Launch {
	return store.Launch{ID: r.ID, LaunchID: r.LaunchID, Team: r.Team, Namespace: n.Namespace, Name: n.Name, Kind: r.Kind,
		Template: r.Template, TemplateVersion: r.TemplateVersion, Owner: r.Owner, Parameters: r.Parameters, Objects: r.Objects,
		CreatedAt: r.CreatedAt, DeletedAt: r.DeletedAt, DeletedBy: r.DeletedBy}
}

// The job list marks the jobs without a record through Launched.
var _ Launched = (*KeptRecords)(nil)
