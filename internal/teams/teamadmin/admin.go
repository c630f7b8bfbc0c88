// Package teamadmin is how admins manage teams from the portal: the
// database row, the lead-approval ceilings and the cluster objects, with an
// audit entry for every change.
package teamadmin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams"
)

// Audit actions of team administration.
const (
	ActionCreate = "team.create"
	ActionUpdate = "team.update"
	ActionRetire = "team.retire"
)

// Form fields of the team form, also the keys of the problem.Fields its
// refusals for input give.
const (
	FieldName         = "name"
	FieldDisplayName  = "display_name"
	FieldCostCenter   = "cost_center"
	FieldMemberGroups = "member_groups"
	FieldLeadGroups   = "lead_groups"
	FieldCeilings     = "ceilings"
)

// AdminStore is what team administration needs from the database.
type AdminStore interface {
	TeamByName(ctx context.Context, name string) (roster.Team, error)
	SaveTeam(ctx context.Context, t roster.Team) (roster.Team, error)
	RetireTeam(ctx context.Context, name string, at time.Time) error
	ReplaceCeilings(ctx context.Context, team string, cs []store.TeamCeiling) error
}

// Admin creates, edits and retires teams: the database row, the ceilings
// and the cluster objects, with an audit entry for each change.
type Admin struct {
	store   AdminStore
	prov    *teams.Provisioner
	flavors func() ([]teams.Flavor, error)
	cohort  string
	audit   *audit.Log
	now     func() time.Time
}

// New builds team administration. flavors lists the cluster's
// flavors (from the informer caches); cohort is the cohort new teams join.
func New(st AdminStore, prov *teams.Provisioner, flavors func() ([]teams.Flavor, error), cohort string, auditLog *audit.Log, now func() time.Time) *Admin {
	if now == nil {
		now = time.Now
	}
	return &Admin{store: st, prov: prov, flavors: flavors, cohort: cohort, audit: auditLog, now: now}
}

// Form is a team as an admin enters it.
type Form struct {
	Name, DisplayName, CostCenter string
	MemberGroups, LeadGroups      []string
	Ceilings                      []store.TeamCeiling
}

// Actor is the admin acting, for the audit log.
type Actor struct {
	Username, IP, Via string
}

var teamName = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$`)

func (f *Form) validate(create bool) error {
	errs := problem.Fields{}
	f.Name = strings.TrimSpace(f.Name)
	f.DisplayName = strings.TrimSpace(f.DisplayName)
	f.CostCenter = strings.TrimSpace(f.CostCenter)
	if create && !teamName.MatchString(f.Name) {
		errs[FieldName] = "Use 1 to 40 lower-case letters, digits and dashes, starting with a letter: the name becomes the namespace team-<name>."
	}
	if utf8.RuneCountInString(f.DisplayName) > 100 {
		errs[FieldDisplayName] = "Use at most 100 characters for the display name."
	}
	if utf8.RuneCountInString(f.CostCenter) > 50 {
		errs[FieldCostCenter] = "Use at most 50 characters for the cost center."
	}
	if len(f.MemberGroups) == 0 {
		errs[FieldMemberGroups] = "Name at least one IdP group whose members are the team's researchers."
	}
	if len(f.LeadGroups) == 0 {
		errs[FieldLeadGroups] = "Name at least one IdP group whose members lead the team."
	}
	for _, g := range slices.Concat(f.MemberGroups, f.LeadGroups) {
		if strings.ContainsAny(g, " \t,") || len(g) > 200 {
			errs[FieldMemberGroups] = "Group names may not contain spaces or commas; put one group per line."
		}
	}
	for _, c := range f.Ceilings {
		if c.Ceiling < 0 {
			errs[FieldCeilings] = "Ceilings are numbers of GPUs, zero or more."
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Create makes a new team: cluster objects first (they clean up after
// themselves if a step fails), then the database row and ceilings. A team
// with that name that exists already is refused.
func (a *Admin) Create(ctx context.Context, by Actor, f Form) (roster.Team, error) {
	if err := f.validate(true); err != nil {
		return roster.Team{}, err
	}
	if _, err := a.store.TeamByName(ctx, f.Name); err == nil {
		return roster.Team{}, problem.Fields{FieldName: fmt.Sprintf("A team named %s exists already; choose another name or edit that team.", f.Name)}
	} else if !errors.Is(err, store.ErrNotFound) {
		return roster.Team{}, fmt.Errorf("create team %s: %w", f.Name, err)
	}
	t, err := a.save(ctx, by, f, ActionCreate)
	return t, err
}

// Update changes a team's display name, cost center, groups and ceilings
// and re-applies its cluster objects, keeping the ClusterQueue's quota.
func (a *Admin) Update(ctx context.Context, by Actor, f Form) (roster.Team, error) {
	if err := f.validate(false); err != nil {
		return roster.Team{}, err
	}
	if _, err := a.store.TeamByName(ctx, f.Name); err != nil {
		return roster.Team{}, fmt.Errorf("update team %s: %w", f.Name, err)
	}
	return a.save(ctx, by, f, ActionUpdate)
}

func (a *Admin) save(ctx context.Context, by Actor, f Form, action string) (roster.Team, error) {
	flavors, err := a.flavors()
	if err != nil {
		return roster.Team{}, fmt.Errorf("save team %s: %w", f.Name, err)
	}
	rec := roster.Team{Name: f.Name, DisplayName: f.DisplayName, CostCenter: f.CostCenter, MemberGroups: f.MemberGroups, LeadGroups: f.LeadGroups}
	spec := teams.Spec{Team: rec, Quotas: teams.ZeroQuotas(flavors), BorrowCPUAndMemory: true}
	if err := a.prov.Apply(ctx, spec, a.cohort, flavors, teams.ApplyOptions{KeepQuota: true}); err != nil {
		return roster.Team{}, kube.MapError(err)
	}
	t, err := a.store.SaveTeam(ctx, rec)
	if err != nil {
		if action == ActionCreate {
			err = errors.Join(err, kube.MapError(a.prov.Delete(ctx, f.Name)))
		}
		return roster.Team{}, err
	}
	if err := a.store.ReplaceCeilings(ctx, f.Name, f.Ceilings); err != nil {
		return t, err
	}
	ceilings := map[string]int64{}
	for _, c := range f.Ceilings {
		ceilings[c.Flavor+" "+c.Resource] = c.Ceiling
	}
	err = a.audit.Record(ctx, audit.Event{Actor: by.Username, Action: action, Target: "team/" + f.Name, IP: by.IP, Via: by.Via,
		Detail: map[string]any{"team": f.Name, "display_name": f.DisplayName, "cost_center": f.CostCenter,
			"member_groups": f.MemberGroups, "lead_groups": f.LeadGroups, "ceilings": ceilings}})
	return t, err
}

// Retire stops new admissions for the team (its queues are put on Hold, so
// running work finishes) and marks it retired, which removes it from its
// members' teams in the portal.
func (a *Admin) Retire(ctx context.Context, by Actor, name string) error {
	if _, err := a.store.TeamByName(ctx, name); err != nil {
		return fmt.Errorf("retire team %s: %w", name, err)
	}
	if err := a.prov.Hold(ctx, name, true); err != nil {
		return fmt.Errorf("retire team %s: %w", name, kube.MapError(err))
	}
	if err := a.store.RetireTeam(ctx, name, a.now().UTC()); err != nil {
		return err
	}
	return a.audit.Record(ctx, audit.Event{Actor: by.Username, Action: ActionRetire, Target: "team/" + name, IP: by.IP, Via: by.Via,
		Detail: map[string]any{"team": name, "stop_policy": "Hold"}})
}
