package reclaim

import (
	"context"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/store"
)

// ErrNotNotebook is "keep it running" asked of a job that is not a notebook.
var ErrNotNotebook = problem.New("only notebooks are stopped when idle, so only a notebook can be kept running", problem.Problem{Kind: problem.Conflict,
	Title: "Not possible for this job", Detail: "Only notebooks are stopped when idle, so only a notebook can be kept running."})

// ReasonError is an exemption without a usable reason.
type ReasonError struct{}

// Problem is Invalid: a reason is missing or too long.
func (e ReasonError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Say why", Detail: e.Error()}
}

func (ReasonError) Error() string {
	return "Say why this job is exempt from idle reclaim (at most 500 characters)."
}

// Keep holds a notebook for its policy's extension ("keep it running"):
// a pending warning is withdrawn and no new one comes before the
// extension ends. It returns when the hold ends.
func (r *Reclaimer) Keep(ctx context.Context, actor Actor, l store.Launch) (time.Time, error) {
	if catalog.Kind(l.Kind) != catalog.KindNotebook {
		return time.Time{}, ErrNotNotebook
	}
	p, err := r.PolicyFor(ctx, l.Team, catalog.KindNotebook)
	if err != nil {
		return time.Time{}, err
	}
	now := r.now()
	until := now.Add(p.Extension)
	entry, err := r.entry(actor, ActionKeep, l.Namespace+"/"+l.Name, map[string]any{"until": until, "extensionSeconds": int(p.Extension.Seconds())})
	if err != nil {
		return time.Time{}, err
	}
	h := store.IdleHold{LaunchID: l.LaunchID, Namespace: l.Namespace, Name: l.Name, Reason: "kept running by " + actor.Username,
		HeldBy: actor.Username, HeldAt: now, Until: &until}
	if err := r.Store.HoldIdle(ctx, h, closeKept, entry); err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// Exempt keeps a job from idle reclaim until the exemption is removed; a
// lead gives the reason, which the job page and the audit log show.
func (r *Reclaimer) Exempt(ctx context.Context, actor Actor, l store.Launch, reason string) error {
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 500 {
		return ReasonError{}
	}
	now := r.now()
	entry, err := r.entry(actor, ActionExempt, l.Namespace+"/"+l.Name, map[string]any{"reason": reason})
	if err != nil {
		return err
	}
	h := store.IdleHold{LaunchID: l.LaunchID, Namespace: l.Namespace, Name: l.Name, Exempt: true, Reason: reason, HeldBy: actor.Username, HeldAt: now}
	return r.Store.HoldIdle(ctx, h, closeExempt, entry)
}

// Unexempt removes a job's exemption or extension.
func (r *Reclaimer) Unexempt(ctx context.Context, actor Actor, l store.Launch) error {
	entry, err := r.entry(actor, ActionUnexempt, l.Namespace+"/"+l.Name, nil)
	if err != nil {
		return err
	}
	return r.Store.ReleaseIdleHold(ctx, l.LaunchID, entry)
}

// JobState is what the job page says about idleness and reclaim.
type JobState struct {
	Policy Policy
	// Warning is set while a notebook is warned: it stops at StopAt.
	Warning *Warning
	// Flagged is set while a training job is flagged idle.
	Flagged bool
	// Scaled is set while an endpoint stays scaled down for idleness.
	Scaled *store.IdleEpisode
	// Stopped is the reclaim that stopped this notebook, while it stays stopped.
	Stopped *store.IdleEpisode
	// Hold is the job's exemption or extension, if one holds now.
	Hold *store.IdleHold
}

// Warning is a notebook's pending stop.
type Warning struct {
	Since, StopAt time.Time
}

// Reason says why the reclaim stopped or scaled a job, in a sentence.
func Reason(e store.IdleEpisode) string {
	p := Policy{Threshold: e.ThresholdPercent, Window: time.Duration(e.WindowSeconds) * time.Second}
	what := "Stopped by idle reclaim"
	if e.Action == actScaled {
		what = "Scaled to its minimum by idle reclaim"
	}
	at := ""
	if e.ActedAt != nil {
		at = " at " + e.ActedAt.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	s := fmt.Sprintf("%s%s: %s.", what, at, idleWords(p))
	if e.GPUsFreed > 0 {
		s += fmt.Sprintf(" Freed %d %s (%.2f idle GPU-hours, %s; %s an hour from then).", e.GPUsFreed, plural(e.GPUsFreed, "GPU", "GPUs"),
			e.IdleGPUHours, e.IdleCostUSD, e.USDPerHour)
	}
	if e.Action == actStopped {
		s += " Its workspace is kept."
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// holdOf is the hold on a launch, or ErrNotFound: looked up among every
// hold, kept until one changes, or read alone without KeptHolds.
func (r *Reclaimer) holdOf(ctx context.Context, launchID string) (store.IdleHold, error) {
	if r.KeptHolds == nil {
		return r.Store.IdleHold(ctx, launchID)
	}
	all, err := r.KeptHolds.Get(ctx, "", r.Store.IdleHolds)
	if err != nil {
		return store.IdleHold{}, err
	}
	h, ok := all[launchID]
	if !ok {
		return store.IdleHold{}, fmt.Errorf("idle hold of %s: %w", launchID, store.ErrNotFound)
	}
	return h, nil
}

// StateOf reads a job's idle state for its page; stopped says whether the
// job is stopped now (a stop by the reclaim is shown only then).
func (r *Reclaimer) StateOf(ctx context.Context, l store.Launch, stopped bool) (JobState, error) {
	// The policy, the hold and the latest episode are independent reads:
	// the job page waits for the slowest, not for the three in turn.
	var (
		g                   errgroup.Group
		p                   Policy
		h                   store.IdleHold
		e                   store.IdleEpisode
		holdErr, episodeErr error
	)
	g.Go(func() (err error) {
		p, err = r.PolicyFor(ctx, l.Team, catalog.Kind(l.Kind))
		return err
	})
	g.Go(func() error {
		h, holdErr = r.holdOf(ctx, l.LaunchID)
		return nil
	})
	g.Go(func() error {
		e, episodeErr = r.Store.LatestIdleEpisode(ctx, l.Namespace, l.Name)
		return nil
	})
	if err := g.Wait(); err != nil {
		return JobState{}, err
	}
	st := JobState{Policy: p}
	switch {
	case holdErr == nil:
		if h.Exempt || h.Until != nil && h.Until.After(r.now()) {
			st.Hold = &h
		}
	case !errors.Is(holdErr, store.ErrNotFound):
		return JobState{}, holdErr
	}
	if errors.Is(episodeErr, store.ErrNotFound) {
		return st, nil
	}
	if episodeErr != nil {
		return JobState{}, episodeErr
	}
	if e.LaunchID != l.LaunchID {
		return st, nil
	}
	open := e.ClosedAt == nil
	switch {
	case open && e.Action == "" && e.WarnedAt != nil && e.ActAfter != nil:
		st.Warning = &Warning{Since: e.IdleSince, StopAt: *e.ActAfter}
	case open && e.Action == actFlagged:
		st.Flagged = true
	case open && e.Action == actScaled:
		st.Scaled = &e
	case e.Action == actStopped && stopped:
		st.Stopped = &e
	}
	return st, nil
}

// Bounds returns the configured defaults and bounds (for the admin page).
func (r *Reclaimer) Bounds() Settings { return r.Settings }
