package quota

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/teams"
)

// Change is a delta to one quota line of a team's ClusterQueue.
type Change struct {
	// GrantKey identifies the grant (the request id).
	GrantKey int64
	Team     string
	Flavor   string
	Resource corev1.ResourceName
	Delta    int64
}

// ClusterQueues changes team ClusterQueues' nominal quota through the API
// server with the portal's own credentials, and keeps the team
// ResourceQuota in step.
type ClusterQueues struct {
	Kueue kueueclient.Interface
	Kube  kubernetes.Interface
}

// Apply adds the change's delta to the quota line, unless the grant is
// already applied. check sees the current nominal quota first and may
// refuse. Conflicting writers are retried with a fresh read, so concurrent
// grants on one ClusterQueue all take effect.
func (c *ClusterQueues) Apply(ctx context.Context, ch Change, check func(nominal int64) error) error {
	return c.update(ctx, ch, true, check)
}

// Revert subtracts the change's delta again, unless it was already reverted.
func (c *ClusterQueues) Revert(ctx context.Context, ch Change) error {
	return c.update(ctx, ch, false, nil)
}

func (c *ClusterQueues) update(ctx context.Context, ch Change, apply bool, check func(int64) error) error {
	name := naming.ClusterQueue(ch.Team)
	// The ClusterQueue records which grants are applied in the same update as
	// the quota change, so applying and reverting are idempotent even when a
	// database commit fails after the cluster changed.
	key := naming.AnnotationQuotaGrantPrefix + strconv.FormatInt(ch.GrantKey, 10)
	cqs := c.Kueue.KueueV1beta2().ClusterQueues()
	var updated *kueue.ClusterQueue
	// Kueue's status writes and other approvals race for the ClusterQueue's
	// resourceVersion: retry for up to about two seconds, with jitter so
	// several leads approving at once spread out instead of colliding again.
	backoff := wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.5}
	err := retry.RetryOnConflict(backoff, func() error {
		cq, err := cqs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, applied := cq.Annotations[key]
		if applied == apply {
			updated = cq
			return nil
		}
		line := quotaLine(cq, ch.Flavor, ch.Resource)
		if line == nil {
			return problem.Fields{FieldFlavor: fmt.Sprintf(
				"The team's ClusterQueue %s has no quota line for %s in flavor %s. Ask an admin to add the flavor to the team.", name, ch.Resource, ch.Flavor)}
		}
		nominal := line.NominalQuota.Value()
		if check != nil {
			if err := check(nominal); err != nil {
				return err
			}
		}
		delta := ch.Delta
		if !apply {
			delta = -delta
		}
		next := nominal + delta
		if next < 0 {
			if !apply {
				next = 0 // quota was lowered by hand since; never go negative
			} else {
				return problem.Fields{FieldDelta: fmt.Sprintf(
					"The team has a nominal quota of %d in %s, so it cannot give back %d.", nominal, ch.Flavor, -delta)}
			}
		}
		line.NominalQuota = *resource.NewQuantity(next, resource.DecimalSI)
		if cq.Annotations == nil {
			cq.Annotations = map[string]string{}
		}
		if apply {
			cq.Annotations[key] = ch.note()
		} else {
			delete(cq.Annotations, key)
		}
		updated, err = cqs.Update(ctx, cq, metav1.UpdateOptions{FieldManager: naming.FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("change quota of %s %s in ClusterQueue %s: %w", ch.Flavor, ch.Resource, name, kube.MapError(err))
	}
	if err := teams.SyncResourceQuota(ctx, c.Kube, updated, naming.Namespace(ch.Team)); err != nil {
		return fmt.Errorf("change quota of team %s: %w", ch.Team, err)
	}
	return nil
}

// note is what a ClusterQueue's annotation of an applied grant says.
func (ch Change) note() string { return fmt.Sprintf("%s %s %+d", ch.Flavor, ch.Resource, ch.Delta) }

// AppliedGrant is a grant a team ClusterQueue records as applied: the
// request id and what its annotation says.
type AppliedGrant struct {
	ClusterQueue string
	RequestID    int64
	Note         string
}

// Records says whether the grant is the change's: same ClusterQueue,
// flavor, resource and delta.
func (g AppliedGrant) Records(ch Change) bool {
	return g.RequestID == ch.GrantKey && g.ClusterQueue == naming.ClusterQueue(ch.Team) && g.Note == ch.note()
}

// AppliedGrants lists the grants the ClusterQueues record as applied.
func (c *ClusterQueues) AppliedGrants(ctx context.Context) ([]AppliedGrant, error) {
	cqs, err := c.Kueue.KueueV1beta2().ClusterQueues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ClusterQueues: %w", kube.MapError(err))
	}
	var gs []AppliedGrant
	for _, cq := range cqs.Items {
		for k, v := range cq.Annotations {
			raw, ok := strings.CutPrefix(k, naming.AnnotationQuotaGrantPrefix)
			if !ok {
				continue
			}
			if id, err := strconv.ParseInt(raw, 10, 64); err == nil {
				gs = append(gs, AppliedGrant{ClusterQueue: cq.Name, RequestID: id, Note: v})
			}
		}
	}
	slices.SortFunc(gs, func(a, b AppliedGrant) int { return cmp.Compare(a.RequestID, b.RequestID) })
	return gs, nil
}

func quotaLine(cq *kueue.ClusterQueue, flavor string, r corev1.ResourceName) *kueue.ResourceQuota {
	for gi := range cq.Spec.ResourceGroups {
		for fi := range cq.Spec.ResourceGroups[gi].Flavors {
			f := &cq.Spec.ResourceGroups[gi].Flavors[fi]
			if string(f.Name) != flavor {
				continue
			}
			for ri := range f.Resources {
				if f.Resources[ri].Name == r {
					return &f.Resources[ri]
				}
			}
		}
	}
	return nil
}
