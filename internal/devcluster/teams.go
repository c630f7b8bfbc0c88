package devcluster

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/teams"
)

// AdminGroup is the local IdP's admin group (the portal's default
// --admin-groups), bound to naming.AdminRole in every team namespace.
const AdminGroup = "gantry-admins"

// Team is one team of deploy/local/teams.yaml: its record and quotas.
type Team struct{ roster.Entry }

// Teams is the content of teams.yaml.
type Teams struct {
	// Cohort is the Kueue cohort every team's ClusterQueue joins.
	Cohort string
	Teams  []Team
}

// LoadTeams reads a teams file (roster.ReadFile); the local stack needs its
// cohort.
func LoadTeams(path string) (Teams, error) {
	f, err := roster.ReadFile(path)
	if err != nil {
		return Teams{}, err
	}
	if f.Cohort == "" {
		return Teams{}, fmt.Errorf("parse %s: cohort is required", path)
	}
	t := Teams{Cohort: f.Cohort}
	for _, e := range f.Teams {
		t.Teams = append(t.Teams, Team{e})
	}
	return t, nil
}

// Namespace is the team's namespace.
func (t Team) Namespace() string { return naming.Namespace(t.Name) }

// ClusterQueue is the name of the team's ClusterQueue.
func (t Team) ClusterQueue() string { return naming.ClusterQueue(t.Name) }

// Objects are the cluster objects of a team (see internal/teams): namespace
// (Pod Security restricted), ClusterQueue in the cohort with borrowing and
// preemption, LocalQueue, the RoleBindings of its IdP groups and of the
// admin group, a ResourceQuota on accelerators and the ingress NetworkPolicy.
func (t Team) Objects(cohort string, pools []Pool) ([]runtime.Object, error) {
	return teams.Objects(t.clusterTeam(), cohort, flavors(pools))
}

// clusterTeam is the team as internal/teams makes it; the local portal runs
// on the host, but team NetworkPolicies admit the system namespace, where
// the chart runs it.
func (t Team) clusterTeam() teams.Spec {
	return teams.Spec{Team: t.Team, Quotas: t.Quotas,
		AdminGroups: []string{AdminGroup}, PortalNamespace: naming.SystemNamespace}
}

// flavors are the pools as Kueue flavors, in file order.
func flavors(pools []Pool) []teams.Flavor {
	out := make([]teams.Flavor, 0, len(pools))
	for _, p := range pools {
		f := teams.Flavor{Name: p.Name}
		for r := range p.GPUResources() {
			f.Accelerators = append(f.Accelerators, r)
		}
		slices.Sort(f.Accelerators)
		out = append(out, f)
	}
	return out
}

// ApplyTeam creates or updates a team's cluster objects, resetting its
// quota to the file's; a failed first create leaves nothing behind.
func ApplyTeam(ctx context.Context, cfg *rest.Config, cohort string, t Team, pools []Pool) error {
	p, err := teams.NewProvisioner(cfg, fieldManager)
	if err != nil {
		return err
	}
	if err := p.Apply(ctx, t.clusterTeam(), cohort, flavors(pools), teams.ApplyOptions{}); err != nil {
		return fmt.Errorf("apply team %s: %w", t.Name, err)
	}
	return nil
}

// DeleteTeam deletes a team's namespace and ClusterQueue.
func DeleteTeam(ctx context.Context, cfg *rest.Config, t Team) error {
	p, err := teams.NewProvisioner(cfg, fieldManager)
	if err != nil {
		return err
	}
	if err := p.Delete(ctx, t.Name); err != nil {
		return fmt.Errorf("delete team %s: %w", t.Name, err)
	}
	return nil
}
