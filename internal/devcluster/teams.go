package devcluster

import (
	"context"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/teams"
)

// AdminGroup is the local IdP's admin group (the portal's default
// --admin-groups), bound to naming.AdminRole in every team namespace.
const AdminGroup = "gantry-admins"

// Team is one team of deploy/local/teams.yaml.
type Team struct {
	Name         string   `json:"name"`
	DisplayName  string   `json:"displayName,omitempty"`
	CostCenter   string   `json:"costCenter,omitempty"`
	MemberGroups []string `json:"memberGroups,omitempty"`
	LeadGroups   []string `json:"leadGroups,omitempty"`
	// Quotas is the nominal quota per ResourceFlavor (= pool name).
	Quotas map[string]corev1.ResourceList `json:"quotas,omitempty"`
}

// Teams is the content of teams.yaml.
type Teams struct {
	// Cohort is the Kueue cohort every team's ClusterQueue joins.
	Cohort string `json:"cohort"`
	Teams  []Team `json:"teams"`
}

// LoadTeams reads a teams file.
func LoadTeams(path string) (Teams, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Teams{}, fmt.Errorf("read teams: %w", err)
	}
	var t Teams
	if err := yaml.UnmarshalStrict(b, &t); err != nil {
		return Teams{}, fmt.Errorf("parse %s: %w", path, err)
	}
	if t.Cohort == "" {
		return Teams{}, fmt.Errorf("parse %s: cohort is required", path)
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
func (t Team) clusterTeam() teams.Team {
	return teams.Team{Name: t.Name, DisplayName: t.DisplayName, CostCenter: t.CostCenter,
		MemberGroups: t.MemberGroups, LeadGroups: t.LeadGroups, Quotas: t.Quotas,
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
