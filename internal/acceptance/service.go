package acceptance

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"time"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// Store is what the service needs from the database.
type Store interface {
	AcceptanceDefinition(ctx context.Context, pool string) (store.AcceptanceDefinition, error)
	AcceptanceDefinitions(ctx context.Context) ([]store.AcceptanceDefinition, error)
	SaveAcceptanceDefinition(ctx context.Context, d store.AcceptanceDefinition) (store.AcceptanceDefinition, error)
	CreateAcceptanceRun(ctx context.Context, r store.AcceptanceRun) (store.AcceptanceRun, error)
	AcceptanceRun(ctx context.Context, id int64) (store.AcceptanceRun, error)
	AcceptanceRuns(ctx context.Context, pool string, limit int) ([]store.AcceptanceRun, error)
	TeamByName(ctx context.Context, name string) (roster.Team, error)
}

// Person is who asks, as the web layer resolved them.
type Person struct {
	Username string
	// Groups are passed to the API server when the run acts as this person.
	Groups []string
	Admin  bool
	// Teams the person is a member of, and those of them they lead.
	Teams, Leads []string
	Via, IP      string
}

// DeniedError is a refusal in words.
type DeniedError struct{ Reason string }

func (e *DeniedError) Error() string { return e.Reason }

// Problem words the refusal.
func (e *DeniedError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Forbidden, Title: "Not allowed", Detail: e.Reason}
}

// ErrRunInProgress means the pool already has a run that has not finished.
var ErrRunInProgress = problem.New("an acceptance run of this pool is already running", problem.Problem{Kind: problem.Conflict, Title: "Already running",
	Detail: "An acceptance run of this pool is already running; wait for it to finish, then start another."})

// Service defines acceptance runs, starts them and reads their reports.
type Service struct {
	Store Store
	Audit *audit.Log
	Now   func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Definitions lists every pool's definition.
func (s *Service) Definitions(ctx context.Context) ([]Definition, error) {
	rows, err := s.Store.AcceptanceDefinitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(rows))
	for _, r := range rows {
		out = append(out, definitionFromStore(r))
	}
	return out, nil
}

// Definition returns a pool's definition, or store.ErrNotFound.
func (s *Service) Definition(ctx context.Context, pool string) (Definition, error) {
	d, err := s.Store.AcceptanceDefinition(ctx, pool)
	if err != nil {
		return Definition{}, err
	}
	return definitionFromStore(d), nil
}

// SaveDefinition validates and stores a pool's definition (admins only;
// the web layer checks the role) and audits the change.
func (s *Service) SaveDefinition(ctx context.Context, p Person, d Definition) (Definition, error) {
	if !p.Admin {
		return Definition{}, &DeniedError{Reason: "Only Gantry admins define acceptance runs."}
	}
	if errs := d.Validate(); errs != nil {
		return Definition{}, errs
	}
	if _, err := s.Store.TeamByName(ctx, d.Team); errors.Is(err, store.ErrNotFound) {
		return Definition{}, fieldError("team", fmt.Sprintf("There is no team called %q.", d.Team))
	} else if err != nil {
		return Definition{}, err
	}
	d.UpdatedBy, d.UpdatedAt = p.Username, s.now()
	before, err := s.Store.SaveAcceptanceDefinition(ctx, d.toStore())
	if err != nil {
		return Definition{}, err
	}
	detail := map[string]any{"after": d}
	if before.Pool != "" {
		detail["before"] = definitionFromStore(before)
	}
	if err := s.Audit.Record(ctx, audit.Event{Actor: p.Username, Action: ActionDefinitionSave, Target: "pool/" + d.Pool,
		Detail: detail, IP: p.IP, Via: p.Via}); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// MayStart says whether the person may start a run of the definition:
// admins, and leads of the definition's team.
func (p Person) MayStart(d Definition) bool {
	return p.Admin || slices.Contains(p.Leads, d.Team)
}

// MayRead says whether the person may read a run of the team's pool.
func (p Person) MayRead(team string) bool {
	return p.Admin || slices.Contains(p.Teams, team)
}

// Start records a new run of the pool's definition; the leader's loop
// launches it. A pool runs one acceptance run at a time.
func (s *Service) Start(ctx context.Context, p Person, pool string) (Report, error) {
	d, err := s.Store.AcceptanceDefinition(ctx, pool)
	if errors.Is(err, store.ErrNotFound) {
		return Report{}, fieldError("pool", fmt.Sprintf("Pool %q has no acceptance definition; an admin defines one first.", pool))
	}
	if err != nil {
		return Report{}, err
	}
	def := definitionFromStore(d)
	if !p.MayStart(def) {
		return Report{}, &DeniedError{Reason: fmt.Sprintf("Only Gantry admins and leads of team %s, whose quota pool %s's acceptance run uses, may start one.", def.Team, pool)}
	}
	recent, err := s.Store.AcceptanceRuns(ctx, pool, 5)
	if err != nil {
		return Report{}, err
	}
	for _, r := range recent {
		if r.Status == string(StatusRunning) {
			return Report{}, fmt.Errorf("start acceptance run of %s (run %d is running): %w", pool, r.ID, ErrRunInProgress)
		}
	}
	defJSON, err := json.Marshal(def)
	if err != nil {
		return Report{}, fmt.Errorf("start acceptance run of %s: %w", pool, err)
	}
	steps, err := json.Marshal(newSteps())
	if err != nil {
		return Report{}, fmt.Errorf("start acceptance run of %s: %w", pool, err)
	}
	row, err := s.Store.CreateAcceptanceRun(ctx, store.AcceptanceRun{
		Pool: pool, Team: def.Team, Definition: defJSON, StartedBy: p.Username, StarterGroups: p.Groups,
		LaunchID: launchID(), Status: string(StatusRunning), Step: 1, Steps: steps, CreatedAt: s.now(),
	})
	if err != nil {
		return Report{}, err
	}
	if err := s.Audit.Record(ctx, audit.Event{Actor: p.Username, Action: ActionRunStart, Target: "pool/" + pool,
		Detail: map[string]any{"run": row.ID, "team": def.Team, "template": def.Template}, IP: p.IP, Via: p.Via}); err != nil {
		return Report{}, err
	}
	return ReportOf(row)
}

// Run returns a run's report for a person who may read it.
func (s *Service) Run(ctx context.Context, p Person, id int64) (Report, error) {
	row, err := s.Store.AcceptanceRun(ctx, id)
	if err != nil {
		return Report{}, err
	}
	if !p.MayRead(row.Team) {
		// As if it did not exist: run ids are guessable.
		return Report{}, fmt.Errorf("acceptance run %d: %w", id, store.ErrNotFound)
	}
	return ReportOf(row)
}

// History returns a pool's runs, newest first.
func (s *Service) History(ctx context.Context, p Person, pool string, limit int) ([]Report, error) {
	rows, err := s.Store.AcceptanceRuns(ctx, pool, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Report, 0, len(rows))
	for _, r := range rows {
		if !p.MayRead(r.Team) {
			continue
		}
		rep, err := ReportOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	return out, nil
}

func fieldError(field, words string) error {
	return fieldErrors{field: words}.err()
}

// launchID is a fresh launch id for a run's job: "acc" and nine random
// letters and digits, stored with the run so every retry reuses it.
func launchID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "acc" + string(b)
}
