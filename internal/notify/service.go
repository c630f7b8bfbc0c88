package notify

import (
	"context"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"time"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/store"
)

// ErrNotLead is returned when someone who is neither the team's lead nor
// an admin changes the team's webhook.
var ErrNotLead = problem.New("only the team's leads and admins change its webhook", problem.Problem{Kind: problem.Forbidden, Title: "Team leads only",
	Detail: "Only the team's leads and Gantry admins can see or change its webhook."})

// WebhookStore keeps team webhooks and their deliveries.
type WebhookStore interface {
	TeamWebhook(ctx context.Context, team string) (store.TeamWebhook, error)
	SetTeamWebhook(ctx context.Context, w store.TeamWebhook) error
	TeamWebhookDeliveries(ctx context.Context, team string, limit int) ([]store.WebhookDelivery, error)
}

// Actor is who changes a webhook, as the audit log names them.
type Actor struct {
	Username string
	Admin    bool
	// LeadOf are the teams the actor leads.
	LeadOf  []string
	IP, Via string
}

// Webhooks reads and sets team webhooks; the team page and the API call it.
type Webhooks struct {
	Store WebhookStore
	Audit *audit.Log
	Now   func() time.Time
	// Kept, when set, keeps each team's webhook and deliveries until one
	// changes (store.TopicWebhooks), so a team page view does not read them.
	Kept *store.Kept[TeamWebhook]
}

// TeamWebhook is a team's webhook and its latest deliveries; URL is empty
// when none is set.
type TeamWebhook struct {
	URL        string
	UpdatedBy  string
	UpdatedAt  time.Time
	Deliveries []store.WebhookDelivery
}

// RecentDeliveries is how many deliveries the team page and API show.
const RecentDeliveries = 10

// Get returns the team's webhook and its latest deliveries.
func (w Webhooks) Get(ctx context.Context, team string) (TeamWebhook, error) {
	return w.Kept.Get(ctx, team, func(ctx context.Context) (TeamWebhook, error) { return w.read(ctx, team) })
}

func (w Webhooks) read(ctx context.Context, team string) (TeamWebhook, error) {
	var out TeamWebhook
	hook, err := w.Store.TeamWebhook(ctx, team)
	switch {
	case err == nil:
		out.URL, out.UpdatedBy, out.UpdatedAt = hook.URL, hook.UpdatedBy, hook.UpdatedAt
	case !errors.Is(err, store.ErrNoWebhook):
		return TeamWebhook{}, err
	}
	if out.Deliveries, err = w.Store.TeamWebhookDeliveries(ctx, team, RecentDeliveries); err != nil {
		return TeamWebhook{}, err
	}
	return out, nil
}

// Set sets the team's webhook URL after checking it; an empty URL removes
// the webhook. Only the team's leads and admins may; the change is audited.
func (w Webhooks) Set(ctx context.Context, a Actor, team, rawURL string) error {
	if !a.Admin && !slices.Contains(a.LeadOf, team) {
		return ErrNotLead
	}
	clean := ""
	if rawURL != "" {
		u, err := ValidateURL(rawURL)
		if err != nil {
			return err
		}
		clean = u.String()
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	if err := w.Store.SetTeamWebhook(ctx, store.TeamWebhook{Team: team, URL: clean, UpdatedBy: a.Username, UpdatedAt: now().UTC()}); err != nil {
		return err
	}
	action := "team.webhook.set"
	if clean == "" {
		action = "team.webhook.remove"
	}
	if w.Audit != nil {
		// The URL often carries the chat tool's secret: the log names the host only.
		detail := map[string]any{}
		if u, err := ValidateURL(clean); err == nil && clean != "" {
			detail["host"] = u.Host
		}
		if err := w.Audit.Record(ctx, audit.Event{Actor: a.Username, Action: action, Target: "team/" + team, Detail: detail, IP: a.IP, Via: a.Via}); err != nil {
			return fmt.Errorf("set webhook of team %s: %w", team, err)
		}
	}
	return nil
}
