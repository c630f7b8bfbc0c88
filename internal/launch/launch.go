// Package launch turns a researcher's form into running workloads:
// authorise → render → check policy → create as the user through
// impersonation → record → audit. Kubernetes RBAC decides who may create
// what where; this package explains its answers in words.
package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/policy"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions of launches and job changes.
const (
	ActionLaunch = "job.launch"
	ActionDelete = "job.delete"
	ActionStop   = "job.stop"
	ActionResume = "job.resume"
	ActionScale  = "job.scale"
	// ActionTemplatesSeeded records new template versions stored from files at start.
	ActionTemplatesSeeded = "templates.seed"
)

// Errors a caller shows in words. ForbiddenError and CollisionError carry details.
var (
	// ErrTemplateNotAllowed means the template is not offered to the team.
	ErrTemplateNotAllowed = errors.New("template not allowed for team")
	// ErrNotSupported means the action does not apply to the job's kind.
	ErrNotSupported = problem.New("action not supported for this kind of job", problem.Problem{Kind: problem.BadRequest, Title: "Not possible for this job",
		Detail: "This action does not apply to this kind of job."})
)

// ForbiddenError is the API server refusing the user in a team's namespace.
type ForbiddenError struct {
	Team string
	// Member is true when the portal sees the user in the team, so the
	// refusal is about their role there rather than membership.
	Member bool
	Err    error
}

func (e *ForbiddenError) Error() string {
	if e.Member {
		return fmt.Sprintf("Kubernetes refused this in team %s's namespace: your role in the team does not allow it. Ask your team lead or the Gantry admins.", e.Team)
	}
	return fmt.Sprintf("Kubernetes refused: you are not a member of team %s, so you cannot do this in its namespace.", e.Team)
}

// Unwrap returns the API server's error.
func (e *ForbiddenError) Unwrap() error { return e.Err }

// Problem words the refusal.
func (e *ForbiddenError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Forbidden, Title: "Not allowed", Detail: e.Error()}
}

// Store is what launches need from the database.
type Store interface {
	TemplateVersionOf(ctx context.Context, name string, version int) (store.TemplateVersion, error)
	TeamByName(ctx context.Context, name string) (roster.Team, error)
	RecordLaunchAudited(ctx context.Context, l store.Launch, e *store.AuditEntry) (store.Launch, error)
	LaunchByName(ctx context.Context, namespace, name string) (store.Launch, error)
	MarkLaunchDeleted(ctx context.Context, namespace, name, by string, at time.Time) error
}

// ImageAllowlist reads the admins' image registry allowlist.
type ImageAllowlist interface {
	ImageRegistries(ctx context.Context) ([]string, error)
}

// Queues reads a team's ClusterQueue for its quota ceiling.
type Queues interface {
	ClusterQueue(name string) (*kueue.ClusterQueue, error)
}

// Actor is who asks, as the API server should see them.
type Actor struct {
	Username string
	Groups   []string
	// Teams the portal resolved from the groups; only used to word refusals.
	Teams []string
	// Via and IP are for the audit log.
	Via string
	IP  string
}

// Request is a launch as the form or the API sends it.
type Request struct {
	Team     string
	Template string
	// Version 0 means the latest.
	Version  int
	Values   map[string]string
	LaunchID string
}

// Result is where the launched workload is.
type Result struct {
	Team, Namespace, Name string
	Kind                  catalog.Kind
	// Existing is true when the launch id had already launched (a double submit).
	Existing bool
}

// Service launches and manages jobs.
type Service struct {
	// Base is the portal's own client config; every write impersonates the user.
	Base *rest.Config
	// Identities prefixes the user and groups the API server sees; the
	// zero value uses the default prefix.
	Identities identity.Prefixes
	Store      Store
	Queues     Queues
	Rules      policy.Rules
	// Allowlist, when set, gives the image registries of each launch in
	// place of Rules.Registries.
	Allowlist ImageAllowlist
	Audit     *audit.Log
	Now       func() time.Time
}

// NewLaunchID returns a fresh random launch id for a form.
func NewLaunchID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// Template loads a template version and decodes it. Version 0 is the
// latest published version, and not found once the template is retired.
func (s *Service) Template(ctx context.Context, name string, version int) (catalog.Template, error) {
	tv, err := s.Store.TemplateVersionOf(ctx, name, version)
	if err != nil {
		return catalog.Template{}, err
	}
	if version == 0 && tv.RetiredAt != nil {
		return catalog.Template{}, fmt.Errorf("template %s is retired: %w", name, store.ErrNotFound)
	}
	return Decode(tv)
}

// OutdatedVersionError is a launch asking for a published version of a
// template that a newer published version has replaced.
type OutdatedVersionError struct {
	Title         string
	Asked, Newest int
}

func (e *OutdatedVersionError) Error() string {
	return fmt.Sprintf("Version %d of the template %q has been replaced by version %d; only the newest published version can be launched. Launch version %d, or leave the version out.",
		e.Asked, e.Title, e.Newest, e.Newest)
}

// CodeTemplateVersionOutdated is the API's code for an OutdatedVersionError.
const CodeTemplateVersionOutdated = "template_version_outdated"

// Problem is a Conflict with its own code, so scripts can retry with the
// newest version.
func (e *OutdatedVersionError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Conflict, Title: "Not the newest version", Detail: e.Error(), Code: CodeTemplateVersionOutdated}
}

// launchable loads the version a launch asks for, refusing retired
// templates, unpublished drafts and replaced versions in words.
func (s *Service) launchable(ctx context.Context, name string, version int) (catalog.Template, error) {
	tv, err := s.Store.TemplateVersionOf(ctx, name, version)
	if err != nil {
		return catalog.Template{}, err
	}
	switch {
	case tv.RetiredAt != nil:
		return catalog.Template{}, problem.Fields{"": fmt.Sprintf("The template %q has been retired by the Gantry admins and cannot be launched any more; choose another template.", tv.Title)}
	case tv.Draft:
		return catalog.Template{}, problem.Fields{"": fmt.Sprintf("Version %d of the template %q is a draft; only published versions can be launched.", tv.Version, tv.Title)}
	}
	if version > 0 {
		newest, err := s.Store.TemplateVersionOf(ctx, name, 0)
		if err != nil {
			return catalog.Template{}, fmt.Errorf("launch %s v%d: newest version: %w", name, version, err)
		}
		if newest.Version != tv.Version {
			return catalog.Template{}, &OutdatedVersionError{Title: tv.Title, Asked: tv.Version, Newest: newest.Version}
		}
	}
	return Decode(tv)
}

// rules are the policy rules of one launch, with the image allowlist as
// the admins have it now.
func (s *Service) rules(ctx context.Context) (policy.Rules, error) {
	r := s.Rules
	if s.Allowlist == nil {
		return r, nil
	}
	regs, err := s.Allowlist.ImageRegistries(ctx)
	if err != nil {
		return policy.Rules{}, err
	}
	r.Registries = regs
	return r, nil
}

// Decode turns a stored template version into a catalog template.
func Decode(tv store.TemplateVersion) (catalog.Template, error) {
	var t catalog.Template
	if err := json.Unmarshal(tv.Spec, &t); err != nil {
		return catalog.Template{}, fmt.Errorf("decode template %s v%d: %w", tv.Name, tv.Version, err)
	}
	t.Version = tv.Version
	return t, nil
}

// Ceiling returns the team's quota ceiling per flavor from its ClusterQueue
// in the cache, or nil when it is unknown.
func (s *Service) Ceiling(team string) policy.Ceiling {
	if s.Queues == nil {
		return nil
	}
	cq, err := s.Queues.ClusterQueue(naming.ClusterQueue(team))
	if err != nil {
		return nil
	}
	out := policy.Ceiling{}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			list := corev1.ResourceList{}
			for _, r := range f.Resources {
				q := r.NominalQuota.DeepCopy()
				if r.BorrowingLimit != nil {
					q.Add(*r.BorrowingLimit)
				}
				list[r.Name] = q
			}
			out[string(f.Name)] = list
		}
	}
	return out
}

// Prepare parses and renders a request and checks it against policy,
// without touching the cluster. Problems come back as problem.Fields.
func (s *Service) Prepare(ctx context.Context, actor Actor, req Request) (catalog.Template, catalog.Values, catalog.Rendered, error) {
	// The template, the team and the allowlist are read at once: one
	// round trip's wait instead of three in a row.
	teamRead := readAsync(ctx, req.Team, s.Store.TeamByName)
	rulesRead := readAsync(ctx, struct{}{}, func(ctx context.Context, _ struct{}) (policy.Rules, error) { return s.rules(ctx) })
	t, err := s.launchable(ctx, req.Template, req.Version)
	team, teamErr := teamRead()
	rules, rulesErr := rulesRead()
	if err != nil {
		return catalog.Template{}, catalog.Values{}, catalog.Rendered{}, err
	}
	if !t.AllowedFor(req.Team) {
		return t, catalog.Values{}, catalog.Rendered{}, problem.Fields{naming.FieldTeam: fmt.Sprintf("The template %q is not offered to team %s.", t.Title, req.Team)}
	}
	v, errs := t.ParseValues(req.Values)
	if len(errs) > 0 {
		return t, v, catalog.Rendered{}, errs
	}
	if !catalog.ValidLaunchID(req.LaunchID) {
		return t, v, catalog.Rendered{}, problem.Fields{"": "This form has expired. Open the launch page again and resubmit."}
	}
	if errors.Is(teamErr, store.ErrNotFound) {
		return t, v, catalog.Rendered{}, problem.Fields{naming.FieldTeam: fmt.Sprintf("There is no team called %q.", req.Team)}
	}
	if teamErr != nil {
		return t, v, catalog.Rendered{}, teamErr
	}
	out, err := catalog.Render(&t, catalog.Target{
		Team: team.Name, Namespace: naming.Namespace(team.Name), CostCenter: team.CostCenter,
		Owner: actor.Username, LaunchID: req.LaunchID, Queue: naming.LocalQueue,
	}, v)
	if err != nil {
		return t, v, catalog.Rendered{}, err
	}
	if rulesErr != nil {
		return t, v, catalog.Rendered{}, rulesErr
	}
	if errs := rules.Check(PolicyLaunch(&t, v, out), s.Ceiling(team.Name)); len(errs) > 0 {
		return t, v, out, errs
	}
	return t, v, out, nil
}

// readAsync starts read(ctx, arg) and returns a wait for its result.
func readAsync[A, T any](ctx context.Context, arg A, read func(context.Context, A) (T, error)) func() (T, error) {
	done := make(chan struct{})
	var v T
	var err error
	go func() {
		defer close(done)
		v, err = read(ctx, arg)
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// Launch creates the request's workload as the user. A repeated request
// with the same launch id returns the first launch's result. If any object
// cannot be created, the ones this call created are deleted again.
func (s *Service) Launch(ctx context.Context, actor Actor, req Request) (Result, error) {
	t, v, out, err := s.Prepare(ctx, actor, req)
	if err != nil {
		return Result{}, err
	}
	res := Result{Team: req.Team, Namespace: out.Namespace, Name: out.Name, Kind: t.Kind}
	client, err := s.clientFor(actor)
	if err != nil {
		return Result{}, err
	}
	var created []catalog.Object
	for _, obj := range out.Objects {
		err := create(ctx, client, obj)
		if apierrors.IsAlreadyExists(err) {
			err = sameLaunch(ctx, client, obj, req.LaunchID)
			if err == nil {
				continue
			}
		}
		if err != nil {
			s.rollback(client, created)
			if errors.Is(kube.MapError(err), kube.ErrForbidden) {
				return Result{}, &ForbiddenError{Team: req.Team, Member: slices.Contains(actor.Teams, req.Team), Err: err}
			}
			return Result{}, fmt.Errorf("launch %s/%s: create %s: %w", out.Namespace, out.Name, kindOf(obj), kube.MapError(err))
		}
		created = append(created, obj)
	}
	params, _ := json.Marshal(v.Strings())
	manifest, err := Manifest(out)
	if err != nil {
		return Result{}, err
	}
	refs := make([]string, 0, len(out.Objects))
	for _, o := range out.Objects {
		refs = append(refs, kindOf(o)+"/"+o.GetName())
	}
	entry, err := s.Audit.Entry(audit.Event{
		Actor: actor.Username, Action: ActionLaunch, Target: out.Namespace + "/" + out.Name,
		Detail: map[string]any{"template": t.Name, "version": t.Version, "parameters": v.Strings(), "objects": refs, "launch_id": req.LaunchID},
		IP:     actor.IP, Via: actor.Via,
	})
	if err != nil {
		return Result{}, err
	}
	// One short transaction: the record and its audit entry, both or neither.
	_, err = s.Store.RecordLaunchAudited(ctx, store.Launch{
		LaunchID: req.LaunchID, Team: req.Team, Namespace: out.Namespace, Name: out.Name, Kind: string(t.Kind),
		Template: t.Name, TemplateVersion: t.Version, Owner: actor.Username, Parameters: params,
		Objects: refs, Manifest: manifest, CreatedAt: s.now(),
	}, &entry)
	if errors.Is(err, store.ErrDuplicateLaunch) {
		res.Existing = true
		return res, nil
	}
	if err != nil {
		return Result{}, err
	}
	if len(created) == 0 {
		res.Existing = true
	}
	return res, nil
}

// Manifest is the rendered objects as multi-document YAML.
func Manifest(out catalog.Rendered) (string, error) {
	var b bytes.Buffer
	for i, o := range out.Objects {
		y, err := yaml.Marshal(o)
		if err != nil {
			return "", fmt.Errorf("manifest of %s: %w", out.Name, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.String(), nil
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Service) clientFor(actor Actor) (kubernetes.Interface, error) {
	c, err := kubernetes.NewForConfig(kube.ForUser(s.Base, s.Identities, actor.Username, actor.Groups))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", actor.Username, err)
	}
	return c, nil
}

// rollback deletes what a failed launch created, newest first. It runs on
// its own context: the request may already be cancelled.
func (s *Service) rollback(client kubernetes.Interface, created []catalog.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(created) - 1; i >= 0; i-- {
		_ = deleteObject(ctx, client, kindOf(created[i]), created[i].GetNamespace(), created[i].GetName())
	}
}

func kindOf(o catalog.Object) string { return o.GetObjectKind().GroupVersionKind().Kind }

func create(ctx context.Context, c kubernetes.Interface, obj catalog.Object) error {
	opts := metav1.CreateOptions{FieldManager: naming.FieldManager}
	var err error
	switch o := obj.(type) {
	case *corev1.Service:
		_, err = c.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *batchv1.Job:
		_, err = c.BatchV1().Jobs(o.Namespace).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		_, err = c.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, opts)
	case *appsv1.Deployment:
		_, err = c.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
	default:
		return fmt.Errorf("create %T: unsupported object", obj)
	}
	return err
}

// sameLaunch checks that an existing object was made by this launch id.
func sameLaunch(ctx context.Context, c kubernetes.Interface, obj catalog.Object, launchID string) error {
	var existing metav1.Object
	var err error
	ns, name := obj.GetNamespace(), obj.GetName()
	switch obj.(type) {
	case *corev1.Service:
		existing, err = c.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	case *batchv1.Job:
		existing, err = c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	case *appsv1.StatefulSet:
		existing, err = c.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	case *appsv1.Deployment:
		existing, err = c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	if existing.GetLabels()[naming.LabelLaunchID] != launchID {
		return &CollisionError{Kind: kindOf(obj), Name: name}
	}
	return nil
}

// CollisionError means an object with the launch's name exists and belongs
// to something else.
type CollisionError struct{ Kind, Name string }

func (e *CollisionError) Error() string {
	return fmt.Sprintf("A %s called %s already exists and was not made by this launch, so nothing was launched.", e.Kind, e.Name)
}

// Problem is a Conflict: the name is taken.
func (e *CollisionError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Conflict, Title: "Name already taken", Detail: e.Error()}
}

func deleteObject(ctx context.Context, c kubernetes.Interface, kind, ns, name string) error {
	opts := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
	var err error
	switch kind {
	case "Service":
		err = c.CoreV1().Services(ns).Delete(ctx, name, opts)
	case "Job":
		err = c.BatchV1().Jobs(ns).Delete(ctx, name, opts)
	case "StatefulSet":
		err = c.AppsV1().StatefulSets(ns).Delete(ctx, name, opts)
	case "Deployment":
		err = c.AppsV1().Deployments(ns).Delete(ctx, name, opts)
	default:
		return fmt.Errorf("delete %s %s/%s: unsupported kind", kind, ns, name)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
