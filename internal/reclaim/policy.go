// Package reclaim gives idle GPUs back, on the GPUs' own evidence (DCGM
// utilization in Prometheus): a notebook under its policy's threshold for
// the window is warned, then stopped with its workspace kept; an idle
// inference endpoint is scaled to its minimum; a training job is only
// flagged. It runs on the leading replica; every step is recorded once in
// the database with its audit entry, so a new leader repeats nothing.
package reclaim

import (
	"context"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"time"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/store"
)

// Settings are the portal's configured defaults and the bounds admins'
// policies must keep.
type Settings struct {
	// Interval is how often the leader looks at every job.
	Interval time.Duration
	// Threshold (percent), Window, Grace and Extension are the defaults of
	// every kind and team without a policy of its own.
	Threshold float64
	Window    time.Duration
	Grace     time.Duration
	Extension time.Duration
	// MinWindow and MaxWindow bound a policy's window; MaxExtension bounds
	// its "keep it running" extension.
	MinWindow, MaxWindow time.Duration
	MaxExtension         time.Duration
}

// DefaultSettings are the defaults of the portal's flags.
func DefaultSettings() Settings {
	return Settings{Interval: time.Minute, Threshold: 5, Window: time.Hour, Grace: 15 * time.Minute,
		Extension: 2 * time.Hour, MinWindow: 10 * time.Minute, MaxWindow: 24 * time.Hour, MaxExtension: 8 * time.Hour}
}

// Validate reports settings no policy could satisfy.
func (s Settings) Validate() error {
	var errs []error
	if s.Interval <= 0 {
		errs = append(errs, errors.New("idle reclaim interval must be positive"))
	}
	if s.MinWindow <= 0 || s.MaxWindow < s.MinWindow {
		errs = append(errs, errors.New("idle window bounds need 0 < min ≤ max"))
	}
	if s.Window < s.MinWindow || s.Window > s.MaxWindow {
		errs = append(errs, fmt.Errorf("idle window %s is outside %s–%s", s.Window, s.MinWindow, s.MaxWindow))
	}
	if s.Threshold <= 0 || s.Threshold >= 100 {
		errs = append(errs, errors.New("idle threshold must be between 0 and 100 percent"))
	}
	if s.Grace <= 0 {
		errs = append(errs, errors.New("idle grace period must be positive"))
	}
	if s.Extension <= 0 || s.MaxExtension < s.Extension {
		errs = append(errs, errors.New("idle extension needs 0 < extension ≤ max extension"))
	}
	return errors.Join(errs...)
}

// Kinds are the template kinds a policy exists for, in page order.
var Kinds = []catalog.Kind{catalog.KindNotebook, catalog.KindInference, catalog.KindTraining}

// Policy is how long a kind of job may sit idle, for one team or (Team "")
// every team without its own.
type Policy struct {
	Team string
	Kind catalog.Kind
	// Threshold is the utilization (percent) under which GPUs are idle.
	Threshold float64
	Window    time.Duration
	// Grace is the time between a notebook's warning and its stop.
	Grace time.Duration
	// Extension is how long "keep it running" holds a notebook.
	Extension time.Duration
	// Stored is false for the configured defaults.
	Stored    bool
	UpdatedBy string
	UpdatedAt time.Time
}

// Action is what the reclaim does to this kind: stop, scale to the
// minimum, or flag.
func (p Policy) Action() string {
	switch p.Kind {
	case catalog.KindNotebook:
		return "warned, then stopped with its workspace kept"
	case catalog.KindInference:
		return "scaled to its minimum replicas"
	default:
		return "flagged, never stopped"
	}
}

// PolicyError is a policy outside the configured bounds, in words.
type PolicyError struct{ Problems []string }

// Problem is Invalid with the sentences.
func (e *PolicyError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Check your input", Detail: e.Error()}
}

// InvalidItems lists the sentences.
func (e *PolicyError) InvalidItems() []string { return e.Problems }

func (e *PolicyError) Error() string {
	return "The idle policy cannot be saved: " + joinSentences(e.Problems)
}

func joinSentences(s []string) string {
	out := ""
	for i, p := range s {
		if i > 0 {
			out += " "
		}
		out += p
	}
	return out
}

// check explains what in p is outside the bounds.
func (s Settings) check(p Policy) error {
	var problems []string
	if !slices.Contains(Kinds, p.Kind) {
		problems = append(problems, fmt.Sprintf("%q is not a template kind.", p.Kind))
	}
	if p.Threshold <= 0 || p.Threshold >= 100 {
		problems = append(problems, "The threshold must be between 0 and 100 percent.")
	}
	if p.Window < s.MinWindow || p.Window > s.MaxWindow {
		problems = append(problems, fmt.Sprintf("The window must be between %s and %s.", Words(s.MinWindow), Words(s.MaxWindow)))
	}
	if p.Grace <= 0 || p.Grace > s.MaxWindow {
		problems = append(problems, fmt.Sprintf("The grace period must be more than 0 and at most %s.", Words(s.MaxWindow)))
	}
	if p.Extension <= 0 || p.Extension > s.MaxExtension {
		problems = append(problems, fmt.Sprintf("The extension must be more than 0 and at most %s.", Words(s.MaxExtension)))
	}
	if len(problems) > 0 {
		return &PolicyError{Problems: problems}
	}
	return nil
}

// Words says a duration as a person would: "60 minutes", "2 hours", "45 seconds".
func Words(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	case d%time.Minute == 0 && d >= time.Minute:
		n := int(d.Minutes())
		if n == 1 {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", n)
	default:
		n := int(d.Round(time.Second).Seconds())
		if n == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", n)
	}
}

func (s Settings) defaultPolicy(kind catalog.Kind) Policy {
	return Policy{Kind: kind, Threshold: s.Threshold, Window: s.Window, Grace: s.Grace, Extension: s.Extension}
}

func fromStore(p store.IdlePolicy) Policy {
	return Policy{Team: p.Team, Kind: catalog.Kind(p.Kind), Threshold: p.ThresholdPercent, Window: time.Duration(p.WindowSeconds) * time.Second,
		Grace: time.Duration(p.GraceSeconds) * time.Second, Extension: time.Duration(p.ExtensionSeconds) * time.Second,
		Stored: true, UpdatedBy: p.UpdatedBy, UpdatedAt: p.UpdatedAt}
}

// clamp keeps a stored policy inside the bounds configured now (they may
// have been narrowed since it was saved).
func (s Settings) clamp(p Policy) Policy {
	p.Window = min(max(p.Window, s.MinWindow), s.MaxWindow)
	p.Extension = min(max(p.Extension, time.Second), s.MaxExtension)
	return p
}

// policies is every stored policy with the defaults, for one scan.
type policies struct {
	s      Settings
	stored map[[2]string]Policy
}

func (r *Reclaimer) loadPolicies(ctx context.Context) (policies, error) {
	rows, err := r.KeptPolicies.Get(ctx, "", r.Store.IdlePolicies)
	if err != nil {
		return policies{}, err
	}
	ps := policies{s: r.Settings, stored: map[[2]string]Policy{}}
	for _, row := range rows {
		ps.stored[[2]string{row.Team, row.Kind}] = r.Settings.clamp(fromStore(row))
	}
	return ps, nil
}

// of is the policy of a team's kind: the team's own, else the stored
// default for every team, else the configured default.
func (ps policies) of(team string, kind catalog.Kind) Policy {
	if p, ok := ps.stored[[2]string{team, string(kind)}]; ok {
		return p
	}
	if p, ok := ps.stored[[2]string{"", string(kind)}]; ok {
		p.Team = team
		return p
	}
	p := ps.s.defaultPolicy(kind)
	p.Team = team
	return p
}

// PolicyFor is the policy that applies to a team's kind of job.
func (r *Reclaimer) PolicyFor(ctx context.Context, team string, kind catalog.Kind) (Policy, error) {
	ps, err := r.loadPolicies(ctx)
	if err != nil {
		return Policy{}, err
	}
	return ps.of(team, kind), nil
}

// Policies lists the default policy of every kind (stored or configured)
// and every team's own, defaults first.
func (r *Reclaimer) Policies(ctx context.Context) ([]Policy, error) {
	ps, err := r.loadPolicies(ctx)
	if err != nil {
		return nil, err
	}
	var out []Policy
	for _, k := range Kinds {
		out = append(out, ps.of("", k))
	}
	for key, p := range ps.stored {
		if key[0] != "" {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out[len(Kinds):], func(a, b Policy) int {
		if a.Team != b.Team {
			if a.Team < b.Team {
				return -1
			}
			return 1
		}
		return slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind)
	})
	return out, nil
}

// SetPolicy stores an admin's policy after checking it against the
// bounds, and audits the change.
func (r *Reclaimer) SetPolicy(ctx context.Context, actor Actor, p Policy) (Policy, error) {
	if err := r.Settings.check(p); err != nil {
		return Policy{}, err
	}
	if p.Team != "" && r.Teams != nil {
		if _, err := r.Teams.TeamByName(ctx, p.Team); err != nil {
			return Policy{}, fmt.Errorf("idle policy for team %s: %w", p.Team, err)
		}
	}
	now := r.now()
	before, err := r.Store.SetIdlePolicy(ctx, store.IdlePolicy{Team: p.Team, Kind: string(p.Kind), ThresholdPercent: p.Threshold,
		WindowSeconds: int(p.Window.Seconds()), GraceSeconds: int(p.Grace.Seconds()), ExtensionSeconds: int(p.Extension.Seconds()),
		UpdatedBy: actor.Username, UpdatedAt: now})
	if err != nil {
		return Policy{}, err
	}
	detail := map[string]any{"team": p.Team, "kind": string(p.Kind), "thresholdPercent": p.Threshold, "windowSeconds": int(p.Window.Seconds()),
		"graceSeconds": int(p.Grace.Seconds()), "extensionSeconds": int(p.Extension.Seconds())}
	if before != nil {
		detail["before"] = map[string]any{"thresholdPercent": before.ThresholdPercent, "windowSeconds": before.WindowSeconds,
			"graceSeconds": before.GraceSeconds, "extensionSeconds": before.ExtensionSeconds}
	}
	target := "idle-policy/" + string(p.Kind)
	if p.Team != "" {
		target = "idle-policy/" + p.Team + "/" + string(p.Kind)
	}
	if err := r.record(ctx, actor, ActionPolicy, target, detail); err != nil {
		return Policy{}, err
	}
	p.Stored, p.UpdatedBy, p.UpdatedAt = true, actor.Username, now
	return p, nil
}
