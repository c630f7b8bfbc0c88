package devcluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// bootstrapComponent applies the cluster's shared objects: ClusterRoles,
// WorkloadPriorityClasses, one ResourceFlavor per pool and every team of
// teams.yaml. Server-side apply makes it cheap to repeat on every up, so
// edits to the data files take effect without a restart.
func bootstrapComponent() component {
	return component{
		name:  "cluster objects",
		group: GroupCluster,
		start: bootstrap,
	}
}

func bootstrap(ctx context.Context, s *Stack) error {
	a, err := s.applier()
	if err != nil {
		return err
	}
	for _, f := range []string{"rbac.yaml", "priorities.yaml"} {
		if err := a.applyFile(ctx, s.layout.Deploy("local", "cluster", f)); err != nil {
			return err
		}
	}
	pools, err := s.pools()
	if err != nil {
		return err
	}
	var flavors []runtime.Object
	for _, p := range pools {
		flavors = append(flavors, p.ResourceFlavor())
	}
	if err := a.apply(ctx, flavors...); err != nil {
		return err
	}
	teams, err := LoadTeams(s.layout.Deploy("local", "teams.yaml"))
	if err != nil {
		return err
	}
	for _, t := range teams.Teams {
		objs, err := t.Objects(teams.Cohort, pools)
		if err != nil {
			return err
		}
		if err := a.apply(ctx, objs...); err != nil {
			return fmt.Errorf("team %s: %w", t.Name, err)
		}
	}
	s.progress("    %d pools, %d teams in cohort %s", len(pools), len(teams.Teams), teams.Cohort)
	return nil
}
