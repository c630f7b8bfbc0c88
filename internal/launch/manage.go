package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/store"
)

// ScaleError is a replica count outside the template's range.
type ScaleError struct{ Min, Max, Asked int }

func (e *ScaleError) Error() string {
	return fmt.Sprintf("This endpoint can run %d to %d replicas; you asked for %d.", e.Min, e.Max, e.Asked)
}

// Problem is Invalid: the replica count is out of range.
func (e *ScaleError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Invalid, Title: "Not scaled", Detail: e.Error()}
}

// Delete removes a launched job's objects as the user and audits it.
func (s *Service) Delete(ctx context.Context, actor Actor, team, name string) error {
	l, err := s.Store.LaunchByName(ctx, naming.Namespace(team), name)
	if err != nil {
		return err
	}
	client, err := s.clientFor(actor)
	if err != nil {
		return err
	}
	refs := slices.Clone([]string(l.Objects))
	slices.Reverse(refs) // workload first, so its pods stop before the Service goes
	for _, ref := range refs {
		kind, objName, _ := strings.Cut(ref, "/")
		if err := deleteObject(ctx, client, kind, l.Namespace, objName); err != nil {
			if errors.Is(kube.MapError(err), kube.ErrForbidden) {
				return &ForbiddenError{Team: team, Member: slices.Contains(actor.Teams, team), Err: err}
			}
			return fmt.Errorf("delete %s/%s: %w", l.Namespace, ref, kube.MapError(err))
		}
	}
	if err := s.Store.MarkLaunchDeleted(ctx, l.Namespace, name, actor.Username, s.now()); err != nil {
		return err
	}
	return s.Audit.Record(ctx, audit.Event{Actor: actor.Username, Action: ActionDelete, Target: l.Namespace + "/" + name,
		Detail: map[string]any{"objects": l.Objects}, IP: actor.IP, Via: actor.Via})
}

// Stop scales a notebook to zero; its workspace claim stays.
func (s *Service) Stop(ctx context.Context, actor Actor, team, name string) error {
	return s.scaleNotebook(ctx, actor, team, name, 0, ActionStop)
}

// Resume scales a stopped notebook back to one.
func (s *Service) Resume(ctx context.Context, actor Actor, team, name string) error {
	return s.scaleNotebook(ctx, actor, team, name, 1, ActionResume)
}

func (s *Service) scaleNotebook(ctx context.Context, actor Actor, team, name string, replicas int32, action string) error {
	l, err := s.Store.LaunchByName(ctx, naming.Namespace(team), name)
	if err != nil {
		return err
	}
	if l.Kind != string(catalog.KindNotebook) {
		return ErrNotSupported
	}
	return s.scale(ctx, actor, l, "StatefulSet", replicas, action)
}

// Scale sets an inference endpoint's replicas within its template's range.
func (s *Service) Scale(ctx context.Context, actor Actor, team, name string, replicas int) error {
	l, err := s.Store.LaunchByName(ctx, naming.Namespace(team), name)
	if err != nil {
		return err
	}
	if l.Kind != string(catalog.KindInference) {
		return ErrNotSupported
	}
	t, err := s.Template(ctx, l.Template, l.TemplateVersion)
	if err != nil {
		return err
	}
	r := t.Parameters.Replicas
	if r == nil || replicas < r.Min || replicas > r.Max {
		lo, hi := 0, 0
		if r != nil {
			lo, hi = r.Min, r.Max
		}
		return &ScaleError{Min: lo, Max: hi, Asked: replicas}
	}
	return s.scale(ctx, actor, l, "Deployment", int32(replicas), ActionScale)
}

func (s *Service) scale(ctx context.Context, actor Actor, l store.Launch, kind string, replicas int32, action string) error {
	client, err := s.clientFor(actor)
	if err != nil {
		return err
	}
	sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if kind == "StatefulSet" {
		_, err = client.AppsV1().StatefulSets(l.Namespace).UpdateScale(ctx, l.Name, sc, metav1.UpdateOptions{})
	} else {
		_, err = client.AppsV1().Deployments(l.Namespace).UpdateScale(ctx, l.Name, sc, metav1.UpdateOptions{})
	}
	if err != nil {
		if errors.Is(kube.MapError(err), kube.ErrForbidden) {
			return &ForbiddenError{Team: l.Team, Member: slices.Contains(actor.Teams, l.Team), Err: err}
		}
		return fmt.Errorf("scale %s %s/%s to %d: %w", kind, l.Namespace, l.Name, replicas, kube.MapError(err))
	}
	return s.Audit.Record(ctx, audit.Event{Actor: actor.Username, Action: action, Target: l.Namespace + "/" + l.Name,
		Detail: map[string]any{"replicas": replicas}, IP: actor.IP, Via: actor.Via})
}

// TemplateSaver stores template versions from seed files.
type TemplateSaver interface {
	SeedTemplateVersion(ctx context.Context, t store.TemplateVersion) (store.TemplateVersion, bool, error)
}

// SeedTemplates stores every template in dir as a new published version
// when its file changed since it was last seeded; the same content keeps
// its version, and versions admins saved in the portal since are kept. It
// returns how many versions were created.
func SeedTemplates(ctx context.Context, st TemplateSaver, dir string) (int, error) {
	ts, err := catalog.LoadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range ts {
		t.Version = 0
		spec, err := json.Marshal(t)
		if err != nil {
			return n, fmt.Errorf("seed template %s: %w", t.Name, err)
		}
		sum := sha256.Sum256(spec)
		_, created, err := st.SeedTemplateVersion(ctx, store.TemplateVersion{
			Name: t.Name, Kind: string(t.Kind), Title: t.Title, Spec: spec, Digest: hex.EncodeToString(sum[:]), CreatedBy: audit.SystemActor,
		})
		if err != nil {
			return n, err
		}
		if created {
			n++
		}
	}
	return n, nil
}
