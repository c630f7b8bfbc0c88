package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/url"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/store"
)

// MomentStore is where attempt moments are recorded.
type MomentStore interface {
	RecordJobMoment(ctx context.Context, m store.JobMoment, notice *store.MomentNotice) (bool, error)
}

// JobObjects is the part of the job cache the recorder reads.
type JobObjects interface {
	WatchJobObjects(onPod func(*corev1.Pod), onWorkload func(*kueue.Workload)) (stop func(), err error)
	Job(namespace, name string) (*batchv1.Job, error)
	Pods(namespace, instance string) ([]*corev1.Pod, error)
	PodByName(namespace, name string) (*corev1.Pod, error)
}

// AttemptRecorder writes the moments of every job's attempts to the store
// as the job cache sees them, and notifies owners and team webhooks of the
// endings that notify. Run it on the leader: moments have unique keys, so a
// restarted or second recorder writes (and notifies) each moment once.
type AttemptRecorder struct {
	Store   MomentStore
	Objects JobObjects
	// Reader names preemptors and the causes of failures; it needs no
	// positions or events.
	Reader StatusReader
	// PublicURL is the portal's address, for links in webhook messages.
	PublicURL *url.URL
	Log       *slog.Logger

	mu      sync.Mutex
	seeds   [2]maphash.Seed
	pending map[momentID]store.JobMoment
	written map[momentID]struct{}
}

// momentID names a job's moment (its namespace, job and moment key) by two
// independent 64-bit hashes of them. The recorder remembers every moment
// it wrote, up to maxWrittenKeys; kept as strings, their keys were most of
// its memory (3 MiB at 10,000 workloads, the load run's heap profile).
// Two moments taken for one would need both hashes to agree (about one
// chance in 2^128 a pair).
type momentID [2]uint64

// idOf is m's momentID; r.mu is held (init has run).
func (r *AttemptRecorder) idOf(m store.JobMoment) momentID {
	var id momentID
	for i, seed := range r.seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, part := range []string{m.Namespace, m.Job, m.MomentKey} {
			_, _ = h.WriteString(part)
			_ = h.WriteByte(0) // no name holds a NUL: the parts cannot run together
		}
		id[i] = h.Sum64()
	}
	return id
}

// maxWrittenKeys bounds the memory of moments known to be written; past it
// the memory starts afresh and the store's unique key keeps writes single.
const maxWrittenKeys = 200_000

// Run records moments until ctx ends, writing what it saw every interval.
func (r *AttemptRecorder) Run(ctx context.Context, interval time.Duration) {
	stop, err := r.Objects.WatchJobObjects(
		func(p *corev1.Pod) { r.offer(PodMoments(ctx, kube.InstanceOf(p), p)) },
		func(wl *kueue.Workload) { r.offer(r.workloadMoments(ctx, wl)) })
	if err != nil {
		r.Log.ErrorContext(ctx, "attempts: cannot watch jobs", "err", err)
		return
	}
	defer stop()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

func (r *AttemptRecorder) offer(ms []store.JobMoment) {
	if len(ms) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.init()
	for _, m := range ms {
		if m.Job == "" || m.Team == "" || m.At.IsZero() {
			continue
		}
		k := r.idOf(m)
		if _, ok := r.written[k]; !ok {
			r.pending[k] = m
		}
	}
}

// init makes the maps; r.mu is held.
func (r *AttemptRecorder) init() {
	if r.pending == nil {
		r.pending = map[momentID]store.JobMoment{}
	}
	if r.written == nil {
		r.written = map[momentID]struct{}{}
		r.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
}

// Flush writes the moments seen since the last flush; those that fail stay
// for the next one.
func (r *AttemptRecorder) Flush(ctx context.Context) {
	r.mu.Lock()
	r.init()
	batch := r.pending
	r.pending = map[momentID]store.JobMoment{}
	r.mu.Unlock()
	var failed []error
	for k, m := range batch {
		var notice *store.MomentNotice
		if Ending(m.Ending).Notifies() {
			notice = r.Notice(m)
		}
		_, err := r.Store.RecordJobMoment(ctx, m, notice)
		r.mu.Lock()
		if err != nil {
			failed = append(failed, err)
			if _, newer := r.pending[k]; !newer {
				r.pending[k] = m
			}
		} else {
			if len(r.written) >= maxWrittenKeys {
				r.written = map[momentID]struct{}{}
			}
			r.written[k] = struct{}{}
			delete(r.pending, k)
		}
		r.mu.Unlock()
	}
	if len(failed) > 0 && ctx.Err() == nil {
		r.Log.WarnContext(ctx, "attempts: moments not recorded, retrying", "count", len(failed), "err", errors.Join(failed...))
	}
}

// workloadMoments reads a Workload's endings with its job's pods and Job.
func (r *AttemptRecorder) workloadMoments(ctx context.Context, wl *kueue.Workload) []store.JobMoment {
	job, kind := r.jobOf(wl)
	if job == "" {
		return nil
	}
	var in StatusInput
	if kind == "Job" {
		in.Pods, _ = r.Objects.Pods(wl.Namespace, job)
		in.Job, _ = r.Objects.Job(wl.Namespace, job)
	}
	return r.Reader.WorkloadMoments(ctx, job, wl, in)
}

// jobOf names the job a Workload belongs to: its Job, or for a pod's
// Workload (notebooks, endpoints) the launch the pod belongs to.
func (r *AttemptRecorder) jobOf(wl *kueue.Workload) (name, kind string) {
	if len(wl.OwnerReferences) == 0 {
		return "", ""
	}
	ref := wl.OwnerReferences[0]
	if ref.Kind != "Pod" {
		return ref.Name, ref.Kind
	}
	if p, err := r.Objects.PodByName(wl.Namespace, ref.Name); err == nil {
		if inst := kube.InstanceOf(p); inst != "" {
			return inst, "Pod"
		}
	}
	return ref.Name, "Pod"
}

// WebhookMessage is the JSON a team's webhook receives for a job ending.
// Text is one line a chat tool shows as it is.
type WebhookMessage struct {
	Text   string    `json:"text"`
	Job    string    `json:"job"`
	Team   string    `json:"team"`
	Ending Ending    `json:"ending"`
	Cause  string    `json:"cause"`
	Link   string    `json:"link"`
	At     time.Time `json:"at"`
}

// Notice is what an ending tells the job's owner and the team's webhook.
func (r *AttemptRecorder) Notice(m store.JobMoment) *store.MomentNotice {
	path := "/teams/" + url.PathEscape(m.Team) + "/jobs/" + url.PathEscape(m.Job)
	link := path
	if r.PublicURL != nil {
		link = r.PublicURL.JoinPath(path).String()
	}
	text := EndingSentence(m.Job, Ending(m.Ending), m.Words)
	payload, err := json.Marshal(WebhookMessage{Text: text + " " + link, Job: m.Job, Team: m.Team, Ending: Ending(m.Ending),
		Cause: m.Words, Link: link, At: m.At.UTC()})
	if err != nil {
		payload = []byte("{}")
	}
	return &store.MomentNotice{Text: text, Link: path, URL: link, Payload: payload}
}

// EndingSentence tells a job's ending to its owner: "Job train failed: …".
func EndingSentence(job string, e Ending, words string) string {
	switch e {
	case EndingSucceeded:
		return fmt.Sprintf("Job %s finished successfully.", job)
	case EndingPreempted:
		return fmt.Sprintf("Job %s was preempted: %s", job, words)
	}
	return fmt.Sprintf("Job %s failed: %s", job, words)
}
