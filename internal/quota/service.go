// Package quota handles quota requests: filing and withdrawing them,
// deciding them within the ceilings admins set, applying approved deltas
// to team ClusterQueues, and reverting grants when they end.
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/teams"
)

// Audit actions of quota requests.
const (
	ActionRequest  = "quota.request"
	ActionWithdraw = "quota.withdraw"
	ActionApprove  = "quota.approve"
	ActionReject   = "quota.reject"
	ActionGrant    = "quota.grant"
	ActionExpire   = "quota.expire"
	ActionRelease  = "quota.release"
)

// Limits on what a request may ask.
const (
	maxDelta     = 1024
	maxReasonLen = 2000
)

// Actor is the person acting, as the quota rules see them.
type Actor struct {
	Username string
	Admin    bool
	// MemberOf are the teams the actor belongs to (as researcher or lead);
	// LeadOf those they lead.
	MemberOf []string
	LeadOf   []string
	IP, Via  string
}

// Store is what quota needs from the database.
type Store interface {
	TeamByName(ctx context.Context, name string) (roster.Team, error)
	CreateQuotaRequest(ctx context.Context, r store.QuotaRequest) (store.QuotaRequest, error)
	WithdrawQuotaRequest(ctx context.Context, id int64, requester string, at time.Time, undo func(store.QuotaRequest) (*store.AuditEntry, error)) (store.QuotaRequest, error)
	QuotaRequestByID(ctx context.Context, id int64) (store.QuotaRequest, error)
	DecideQuotaRequest(ctx context.Context, id int64, decide func(store.QuotaRequest) (store.Decision, error)) (store.QuotaRequest, error)
	RevertDueGrant(ctx context.Context, now time.Time, revert func(store.QuotaGrant) (store.GrantReverted, error)) (store.QuotaGrant, bool, error)
	ReleaseOpenRequest(ctx context.Context, id int64, release func(store.QuotaRequest) (*store.AuditEntry, error)) (bool, error)
	Ceiling(ctx context.Context, team, flavor, resource string) (store.TeamCeiling, error)
	Notify(ctx context.Context, n store.Notification) error
}

// Service is the quota workflow.
type Service struct {
	store   Store
	cluster *ClusterQueues
	audit   *audit.Log
	log     *slog.Logger
	now     func() time.Time
}

// Option configures a Service.
type Option func(*Service)

// WithClock makes the service read time from now (tests move it forward).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// NewService builds the quota workflow.
func NewService(st Store, cluster *ClusterQueues, auditLog *audit.Log, log *slog.Logger, opts ...Option) *Service {
	s := &Service{store: st, cluster: cluster, audit: auditLog, log: log, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewRequest is a quota request as filed.
type NewRequest struct {
	Team, Flavor, Resource string
	Delta                  int64
	// Until is when the change ends; nil means until revoked.
	Until  *time.Time
	Reason string
}

// File validates and stores a request by a member or lead of the team.
func (s *Service) File(ctx context.Context, a Actor, in NewRequest) (store.QuotaRequest, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	errs := problem.Fields{}
	if !slices.Contains(a.MemberOf, in.Team) {
		errs[FieldTeam] = "Choose one of your teams: you can only ask for quota for a team you belong to."
	} else if t, err := s.store.TeamByName(ctx, in.Team); err != nil || t.RetiredAt != nil {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.QuotaRequest{}, fmt.Errorf("file quota request: %w", err)
		}
		errs[FieldTeam] = "This team is retired or unknown, so it cannot get more quota."
	}
	if in.Flavor == "" {
		errs[FieldFlavor] = "Choose the GPU pool (flavor) the quota is for."
	}
	if !teams.IsAccelerator(corev1.ResourceName(in.Resource)) {
		errs[FieldResource] = "Choose a GPU resource: whole GPUs (nvidia.com/gpu) or a MIG slice."
	}
	switch {
	case in.Delta == 0:
		errs[FieldDelta] = "Say how many GPUs more (a positive number) or fewer (a negative number) you need."
	case in.Delta > maxDelta || in.Delta < -maxDelta:
		errs[FieldDelta] = fmt.Sprintf("Ask for at most %d at a time.", maxDelta)
	}
	if in.Until != nil && !in.Until.After(s.now()) {
		errs[FieldUntil] = "The end date must be in the future, or leave it empty for until revoked."
	}
	switch n := utf8.RuneCountInString(in.Reason); {
	case n == 0:
		errs[FieldReason] = "Say why the team needs this, so the lead can decide."
	case n > maxReasonLen:
		errs[FieldReason] = fmt.Sprintf("The reason is too long: use at most %d characters.", maxReasonLen)
	}
	if len(errs) > 0 {
		return store.QuotaRequest{}, errs
	}
	r, err := s.store.CreateQuotaRequest(ctx, store.QuotaRequest{
		Team: in.Team, Flavor: in.Flavor, Resource: in.Resource, Delta: in.Delta,
		Until: utc(in.Until), Reason: in.Reason, Requester: a.Username, CreatedAt: s.now().UTC(),
	})
	if err != nil {
		return store.QuotaRequest{}, err
	}
	if err := s.record(ctx, a, ActionRequest, r, map[string]any{"reason": r.Reason}); err != nil {
		return r, err
	}
	return r, nil
}

// Withdraw withdraws the actor's own open request, taking back the quota
// of an approval that reached only the cluster (see Decide).
func (s *Service) Withdraw(ctx context.Context, a Actor, id int64) (store.QuotaRequest, error) {
	r, err := s.store.WithdrawQuotaRequest(ctx, id, a.Username, s.now().UTC(), func(r store.QuotaRequest) (*store.AuditEntry, error) {
		if err := s.takeBack(ctx, r); err != nil {
			return nil, err
		}
		entry, err := s.audit.Entry(s.event(a, ActionWithdraw, r, nil))
		return &entry, err
	})
	if errors.Is(err, store.ErrNotOpen) {
		return store.QuotaRequest{}, denied("This request was already decided or withdrawn, so it cannot be withdrawn.")
	}
	if err != nil {
		return store.QuotaRequest{}, err
	}
	return r, nil
}

// takeBack reverts the change of an open request that an approval made in
// the cluster before its database commit failed; it does nothing when
// there is none (the ClusterQueue carries no grant of the request).
func (s *Service) takeBack(ctx context.Context, r store.QuotaRequest) error {
	err := s.cluster.Revert(ctx, Change{GrantKey: r.ID, Team: r.Team, Flavor: r.Flavor, Resource: corev1.ResourceName(r.Resource), Delta: r.Delta})
	if errors.Is(err, kube.ErrNotFound) {
		return nil // the team's queue is gone: nothing to take back
	}
	return err
}

// Decide approves or rejects an open request. The comment is required.
// Nobody decides their own request; a lead decides for their team, and
// approves only up to the admins' ceiling; admins decide anything.
//
// An approval changes two stores that share no transaction, the team's
// ClusterQueue in Kubernetes and the request in PostgreSQL, and still takes
// effect exactly once whatever fails between them:
//   - the request row stays locked (FOR UPDATE) from its read to the
//     commit, so no two deciders both find it open;
//   - the ClusterQueue update is a compare-and-set on its resourceVersion
//     that writes the new quota together with an annotation naming the
//     request, and is skipped when that annotation is already there;
//   - the decision, grant, audit entries and notice commit in one
//     transaction, after the cluster changed.
//
// So a database that fails after the cluster changed (a restart, a cut
// connection) rolls back every row and leaves the request open with the
// annotation on the queue: the lead is told in words that nothing was done,
// and deciding again finds the annotation and only writes the rows, so the
// quota is raised once. A commit whose acknowledgement was lost is found on
// the retry: the same person deciding the same way gets the request as
// decided and nothing is written again. A rejection or a withdrawal takes
// back the quota of an earlier approval that reached only the cluster.
func (s *Service) Decide(ctx context.Context, a Actor, id int64, approve bool, comment string) (store.QuotaRequest, error) {
	comment = strings.TrimSpace(comment)
	if comment == "" {
		return store.QuotaRequest{}, problem.Fields{FieldComment: "Add a comment so the requester knows why."}
	}
	if utf8.RuneCountInString(comment) > maxReasonLen {
		return store.QuotaRequest{}, problem.Fields{FieldComment: fmt.Sprintf("The comment is too long: use at most %d characters.", maxReasonLen)}
	}
	now := s.now().UTC()
	r, err := s.store.DecideQuotaRequest(ctx, id, func(r store.QuotaRequest) (store.Decision, error) {
		if err := mayDecide(a, r); err != nil {
			return store.Decision{}, err
		}
		d := store.Decision{Approve: approve, DecidedBy: a.Username, Comment: comment, At: now}
		ch := Change{GrantKey: r.ID, Team: r.Team, Flavor: r.Flavor, Resource: corev1.ResourceName(r.Resource), Delta: r.Delta}
		action, verb := ActionReject, "rejected"
		if approve {
			action, verb = ActionApprove, "approved"
			ceiling, err := s.ceilingCheck(ctx, a, r)
			if err != nil {
				return store.Decision{}, err
			}
			if err := s.cluster.Apply(ctx, ch, ceiling); err != nil {
				return store.Decision{}, err
			}
			d.Grant = &store.QuotaGrant{
				RequestID: r.ID, Team: r.Team, ClusterQueue: naming.ClusterQueue(r.Team),
				Flavor: r.Flavor, Resource: r.Resource, Delta: r.Delta, AppliedAt: now, ExpiresAt: r.Until,
			}
		} else if err := s.takeBack(ctx, r); err != nil {
			return store.Decision{}, err
		}
		events := []audit.Event{s.event(a, action, r, map[string]any{"comment": comment})}
		if d.Grant != nil {
			events = append(events, s.event(a, ActionGrant, r, map[string]any{"cluster_queue": d.Grant.ClusterQueue, "expires_at": d.Grant.ExpiresAt}))
		}
		for _, e := range events {
			entry, err := s.audit.Entry(e)
			if err != nil {
				return store.Decision{}, err
			}
			d.Audit = append(d.Audit, entry)
		}
		text := fmt.Sprintf("%s %s your request for %s %s in %s for team %s: %s", a.Username, verb, signed(r.Delta), r.Resource, r.Flavor, r.Team, comment)
		d.Notice = &store.Notification{Username: r.Requester, Text: text, Link: "/quota-requests", CreatedAt: now}
		return d, nil
	})
	if errors.Is(err, store.ErrNotOpen) {
		return s.decidedAlready(ctx, a, id, approve)
	}
	if err != nil {
		return store.QuotaRequest{}, err
	}
	return r, nil
}

// decidedAlready answers a decision on a request that is no longer open:
// the person who decided it deciding the same way again (a retry after an
// answer that was lost) gets the request as decided; anyone else is told.
func (s *Service) decidedAlready(ctx context.Context, a Actor, id int64, approve bool) (store.QuotaRequest, error) {
	r, err := s.store.QuotaRequestByID(ctx, id)
	if err != nil {
		return store.QuotaRequest{}, err
	}
	want := store.QuotaRejected
	if approve {
		want = store.QuotaApproved
	}
	if r.Status == want && r.DecidedBy == a.Username {
		return r, nil
	}
	return store.QuotaRequest{}, denied("This request was already decided or withdrawn.")
}

// mayDecide applies the rules that do not need the cluster.
func mayDecide(a Actor, r store.QuotaRequest) error {
	if r.Requester == a.Username {
		return denied("Nobody decides their own request: another lead of the team or an admin must.")
	}
	if a.Admin || slices.Contains(a.LeadOf, r.Team) {
		return nil
	}
	return denied(fmt.Sprintf("Only a lead of team %s or an admin can decide this request.", r.Team))
}

// ceilingCheck returns the check an approval's new nominal quota must pass:
// none for admins and for decreases, else at most the admins' ceiling.
func (s *Service) ceilingCheck(ctx context.Context, a Actor, r store.QuotaRequest) (func(int64) error, error) {
	if a.Admin || r.Delta < 0 {
		return nil, nil
	}
	c, err := s.store.Ceiling(ctx, r.Team, r.Flavor, r.Resource)
	if errors.Is(err, store.ErrNotFound) {
		return nil, denied(fmt.Sprintf("Admins set no ceiling for %s in %s for team %s, so only an admin can approve an increase.", r.Resource, r.Flavor, r.Team))
	}
	if err != nil {
		return nil, err
	}
	return func(nominal int64) error {
		if nominal+r.Delta > c.Ceiling {
			return denied(fmt.Sprintf("Approving would raise the team's quota to %d, above the ceiling of %d the admins set, so only an admin can approve it.",
				nominal+r.Delta, c.Ceiling))
		}
		return nil
	}, nil
}

// ExpireDue reverts every grant whose end has come and returns how many
// it reverted.
//
// A leader killed at any point, and the next leader doing the work again,
// revert each grant once: the grant row is locked (FOR UPDATE SKIP LOCKED)
// while its ClusterQueue changes, and the ClusterQueue update is a
// compare-and-set on its resourceVersion that removes the grant's
// annotation together with the quota, and is skipped when the annotation
// is already gone. So a revert that reached the cluster but whose
// transaction died is not applied again; reverted_at, the audit entry and
// the notice commit together, so none is written twice or lost.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	n := 0
	for {
		now := s.now().UTC()
		_, found, err := s.store.RevertDueGrant(ctx, now, func(g store.QuotaGrant) (store.GrantReverted, error) {
			err := s.cluster.Revert(ctx, Change{GrantKey: g.RequestID, Team: g.Team, Flavor: g.Flavor, Resource: corev1.ResourceName(g.Resource), Delta: g.Delta})
			if err != nil && !errors.Is(err, kube.ErrNotFound) { // a team's queue that is gone has nothing left to revert
				return store.GrantReverted{}, err
			}
			r, err := s.store.QuotaRequestByID(ctx, g.RequestID)
			if err != nil {
				return store.GrantReverted{}, err
			}
			sys := Actor{Username: audit.SystemActor, Via: audit.ViaSystem}
			entry, err := s.audit.Entry(s.event(sys, ActionExpire, r, map[string]any{"grant": g.ID, "expired_at": g.ExpiresAt}))
			if err != nil {
				return store.GrantReverted{}, err
			}
			text := fmt.Sprintf("Your grant of %s %s in %s for team %s ended and was reverted.", signed(g.Delta), g.Resource, g.Flavor, g.Team)
			return store.GrantReverted{Audit: &entry,
				Notice: &store.Notification{Username: r.Requester, Text: text, Link: "/quota-requests", CreatedAt: now}}, nil
		})
		if err != nil || !found {
			return n, err
		}
		n++
	}
}

// ReleaseOrphans takes back the quota of approvals that reached a team's
// ClusterQueue but whose decision never committed (the database failed
// between the two) and that nobody has decided again since: the lead was
// told nothing was done, so the cluster is made to agree. It returns how
// many it took back.
//
// Such an approval is a grant annotation on the ClusterQueue whose request
// is still open. The request row is taken with FOR UPDATE SKIP LOCKED: a
// decision in flight holds it from its read to its commit, so it is never
// undone under a lead's feet; a lead deciding while the release holds it
// waits, then finds the annotation gone and applies the approval once.
func (s *Service) ReleaseOrphans(ctx context.Context) (int, error) {
	applied, err := s.cluster.AppliedGrants(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, g := range applied {
		released, err := s.store.ReleaseOpenRequest(ctx, g.RequestID, func(r store.QuotaRequest) (*store.AuditEntry, error) {
			ch := Change{GrantKey: r.ID, Team: r.Team, Flavor: r.Flavor, Resource: corev1.ResourceName(r.Resource), Delta: r.Delta}
			if !g.Records(ch) {
				// Not this request's approval (a database that was reset
				// numbers requests again): leave it to a person.
				s.log.WarnContext(ctx, "a ClusterQueue records a grant that is not this open request's", "cluster_queue", g.ClusterQueue, "request", r.ID, "note", g.Note)
				return nil, errNotOurs
			}
			if err := s.cluster.Revert(ctx, ch); err != nil && !errors.Is(err, kube.ErrNotFound) {
				return nil, err
			}
			sys := Actor{Username: audit.SystemActor, Via: audit.ViaSystem}
			entry, err := s.audit.Entry(s.event(sys, ActionRelease, r, map[string]any{"why": "the approval reached the cluster but its decision was never recorded"}))
			if err != nil {
				return nil, err
			}
			return &entry, nil
		})
		if errors.Is(err, errNotOurs) {
			continue
		}
		if err != nil {
			return n, err
		}
		if released {
			n++
		}
	}
	return n, nil
}

// errNotOurs rolls back a release whose grant is not the open request's.
var errNotOurs = errors.New("the grant is not this request's")

// Run reverts due grants, and takes back approvals that never committed,
// every interval until ctx ends.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.ExpireDue(ctx); err != nil {
			s.log.ErrorContext(ctx, "revert expired quota grants", "err", err, "reverted", n)
		} else if n > 0 {
			s.log.InfoContext(ctx, "reverted expired quota grants", "count", n)
		}
		if n, err := s.ReleaseOrphans(ctx); err != nil {
			s.log.ErrorContext(ctx, "take back approvals that never committed", "err", err, "released", n)
		} else if n > 0 {
			s.log.WarnContext(ctx, "took back approvals that reached the cluster but were never recorded", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) record(ctx context.Context, a Actor, action string, r store.QuotaRequest, extra map[string]any) error {
	return s.audit.Record(ctx, s.event(a, action, r, extra))
}

func (s *Service) event(a Actor, action string, r store.QuotaRequest, extra map[string]any) audit.Event {
	detail := map[string]any{"team": r.Team, "flavor": r.Flavor, "resource": r.Resource, "delta": r.Delta, "requester": r.Requester}
	if r.Until != nil {
		detail["until"] = r.Until
	}
	for k, v := range extra {
		detail[k] = v
	}
	return audit.Event{
		Actor: a.Username, Action: action, Target: fmt.Sprintf("quota-request/%d", r.ID),
		Detail: detail, IP: a.IP, Via: a.Via,
	}
}

func signed(n int64) string { return fmt.Sprintf("%+d", n) }

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
