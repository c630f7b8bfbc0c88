package launch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unique"

	"github.com/gantry-dev/gantry/internal/store"
)

// maxKeptRecords bounds the launch records a replica keeps (a few hundred
// bytes each without their manifests). Past it only the newest are kept,
// and a name not among them is read from PostgreSQL.
const maxKeptRecords = 50_000

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
// while the database's change notices are heard (store.KeptByName), so
// that a job's page, its status refresh and its API answer read no record
// from PostgreSQL before they can start their own reads. A record is
// written twice at most (its launch, its deletion); each write is
// announced to every replica, which reads that record again on its next
// view: a deletion by its transaction (migration 00029), a launch by the
// replica that made it, a moment after its commit (store.Changes.Announce;
// one made by a replica that dies before it announces it is heard of when
// it is retried, when a replica starts, or at the next full read, within
// the kept values' reload). Writes made through this replica take effect
// on its next view, before the notice comes (a launch it announces is not
// heard back, so the copy that view reads is kept); those of another
// replica a moment after their commit, when the notice comes (a view of a
// job launched there within that moment finds no record, as for every kept
// figure).
//
// LaunchByName answers records without their manifests, kept or not;
// LaunchManifest reads one.
type KeptRecords struct {
	RecordStore
	changes *store.Changes
	log     *slog.Logger
	kept    *store.KeptByName[*keptRecord]
}

// NewKeptRecords keeps next's records while changes listens; Run reads
// them.
func NewKeptRecords(next RecordStore, changes *store.Changes, log *slog.Logger) *KeptRecords {
	return &KeptRecords{RecordStore: next, changes: changes, log: log,
		kept: store.NewKeptByName[*keptRecord](changes, store.LaunchNotices, maxKeptRecords)}
}

// forget has the next view read the record named n from PostgreSQL.
func (k *KeptRecords) forget(n store.WorkloadName) { k.kept.Forget(n) }

// LaunchByName returns the named record without its manifest: the kept
// copy when one may be answered, else read from PostgreSQL.
func (k *KeptRecords) LaunchByName(ctx context.Context, namespace, name string) (store.Launch, error) {
	n := store.WorkloadName{Namespace: namespace, Name: name}
	kept, found, known, look := k.kept.Lookup(n)
	if known {
		if !found {
			return store.Launch{}, fmt.Errorf("get launch %s/%s: %w", namespace, name, store.ErrNotFound)
		}
		return kept.launch(n), nil
	}
	rec, err := k.RecordStore.LaunchByName(ctx, namespace, name)
	found = err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Launch{}, err
	}
	rec.Manifest = ""
	if look.Keeps() {
		k.kept.Keep(look, keptName(namespace, name), keepRecord(rec), found)
	}
	return rec, err
}

// Launched reports which of names have a launch record: from memory for
// the names kept or known to have none, the rest in one query.
func (k *KeptRecords) Launched(ctx context.Context, names []store.WorkloadName) (map[store.WorkloadName]bool, error) {
	out := make(map[store.WorkloadName]bool, len(names))
	var ask []store.WorkloadName
	for _, n := range names {
		if _, found, known, _ := k.kept.Lookup(n); known {
			if found {
				out[n] = true
			}
			continue
		}
		ask = append(ask, n)
	}
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
	out := make([]store.Launch, 0, k.kept.Len())
	unknown, ok := k.kept.All(maxUnknownLive, func(n store.WorkloadName, rec *keptRecord) {
		if rec.DeletedAt == nil {
			out = append(out, rec.launch(n))
		}
	})
	if !ok {
		return k.RecordStore.LiveLaunches(ctx)
	}
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
// it has not read them under, and every time the kept values are due
// again (store.KeptByName.Run), until ctx ends. It first has every
// replica read every record again: a replica that died between a launch's
// commit and its announcement (its restart is this one, often) left that
// record unheard of.
func (k *KeptRecords) Run(ctx context.Context) {
	k.changes.Announce(store.LaunchNotices + "*")
	k.kept.Run(ctx, k.read, k.log, "reading every launch record")
}

// Load reads every record (the newest maxKeptRecords) and keeps them,
// but those announced while it read; it keeps nothing unless the replica
// listened under one connection throughout.
func (k *KeptRecords) Load(ctx context.Context) error {
	return k.kept.Load(ctx, k.read)
}

// read is the newest maxKeptRecords records, complete unless there are
// more.
func (k *KeptRecords) read(ctx context.Context) (map[store.WorkloadName]*keptRecord, bool, error) {
	recs, err := k.RecordStore.RecentLaunches(ctx, maxKeptRecords+1)
	if err != nil {
		return nil, false, err
	}
	byName := make(map[store.WorkloadName]*keptRecord, min(len(recs), maxKeptRecords))
	for _, rec := range recs[:min(len(recs), maxKeptRecords)] {
		byName[keptName(rec.Namespace, rec.Name)] = keepRecord(rec)
	}
	return byName, len(recs) <= maxKeptRecords, nil
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
