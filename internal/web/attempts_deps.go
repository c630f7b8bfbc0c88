package web

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/notify"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// AttemptRecords reads the moments of jobs' attempts the leader recorded.
type AttemptRecords interface {
	JobMoments(ctx context.Context, namespace, job string) ([]store.JobMoment, error)
	TeamMoments(ctx context.Context, team string, from time.Time) ([]store.JobMoment, error)
}

// TeamWebhooks reads and sets a team's chat webhook.
type TeamWebhooks interface {
	Get(ctx context.Context, team string) (notify.TeamWebhook, error)
	Set(ctx context.Context, a notify.Actor, team, rawURL string) error
}

// recoveryDays is the window of the team's recovery figure.
const recoveryDays = 30

// teamRecoveryTTL is how long views share a team's recovery figure. It is
// the median and p90 of a month of recoveries, read from every attempt of
// the month (thousands of rows on a busy team, the team page's largest
// read): half a minute more or less does not move it, while reading it
// every few seconds per team kept the collector busy.
const teamRecoveryTTL = 30 * time.Second

// apiAttempt is one attempt of a job in the API.
type apiAttempt struct {
	Number int `json:"number"`
	// Start is null for an attempt that ended before a pod ran; End while it runs.
	Start  *time.Time      `json:"start"`
	End    *time.Time      `json:"end"`
	Ending queue.Ending    `json:"ending,omitempty"`
	Cause  queue.CauseKind `json:"cause,omitempty"`
	Words  string          `json:"words,omitempty"`
	// FirstFailedPod is the pod whose failure ended the attempt, its node and
	// completion index; AlsoFailed the pods that failed after it.
	FirstFailedPod string   `json:"firstFailedPod,omitempty"`
	Node           string   `json:"node,omitempty"`
	PodIndex       *int     `json:"podIndex,omitempty"`
	AlsoFailed     []string `json:"alsoFailed,omitempty"`
	// RecoverySeconds is the time from the previous attempt's end to this
	// one running; null for the first.
	RecoverySeconds *float64 `json:"recoverySeconds"`
}

// apiRecovery is the team's recovery figure over the last Days days.
type apiRecovery struct {
	Days          int     `json:"days"`
	Count         int     `json:"count"`
	MedianSeconds float64 `json:"medianSeconds"`
	P90Seconds    float64 `json:"p90Seconds"`
}

// jobAttempts reads a job's attempts; nil when attempts are not recorded.
func (h *handler) jobAttempts(ctx context.Context, namespace, job string) ([]queue.Attempt, error) {
	if h.Attempts == nil {
		return nil, nil
	}
	ms, err := h.Attempts.JobMoments(ctx, namespace, job)
	if err != nil {
		return nil, err
	}
	return queue.Attempts(ms), nil
}

func apiAttemptsOf(as []queue.Attempt) []apiAttempt {
	out := make([]apiAttempt, 0, len(as))
	for _, a := range as {
		v := apiAttempt{Number: a.Number, Ending: a.Ending, Cause: a.Cause, Words: a.Words, FirstFailedPod: a.Pod, Node: a.Node,
			PodIndex: a.Index, AlsoFailed: a.AlsoFailed}
		if !a.Start.IsZero() {
			v.Start = &a.Start
		}
		if !a.End.IsZero() {
			v.End = &a.End
		}
		if a.Number > 1 && !a.Start.IsZero() {
			s := a.Recovery.Seconds()
			v.RecoverySeconds = &s
		}
		out = append(out, v)
	}
	return out
}

// jobAttemptsView is the job page's attempts table.
func jobAttemptsView(as []queue.Attempt, shown bool) views.JobAttemptsView {
	v := views.JobAttemptsView{Shown: shown}
	for _, a := range as {
		row := views.AttemptRow{Number: a.Number, Started: stamp(a.Start), Ended: stamp(a.End), Ending: endingWords(a.Ending), Words: a.Words,
			FirstPod: podWords(a), AlsoFailed: strings.Join(a.AlsoFailed, ", ")}
		if a.Start.IsZero() {
			row.Started = "never ran"
		}
		if a.End.IsZero() {
			row.Ended, row.Ending = "", "running"
		}
		if a.Number > 1 && !a.Start.IsZero() {
			row.Recovery = wait(a.Recovery)
		}
		v.Rows = append(v.Rows, row)
	}
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Pod != "" && as[i].Ending != queue.EndingSucceeded {
			v.FirstFailure = podWords(as[i])
			break
		}
	}
	return v
}

func endingWords(e queue.Ending) string {
	switch e {
	case queue.EndingPodFailed:
		return "pod failed, retried:"
	case "":
		return ""
	}
	return string(e) + ":"
}

// podWords names a failed pod: "pod train-1 (index 1) on node n2".
func podWords(a queue.Attempt) string {
	if a.Pod == "" {
		return ""
	}
	s := "pod " + a.Pod
	if a.Index != nil {
		s += fmt.Sprintf(" (index %d)", *a.Index)
	}
	if a.Node != "" {
		s += " on node " + a.Node
	}
	return s
}

// teamRecovery is the team's recovery figure over the last recoveryDays.
func (h *handler) teamRecovery(ctx context.Context, team string) (queue.Recovery, bool, error) {
	if h.Attempts == nil {
		return queue.Recovery{}, false, nil
	}
	load := func(ctx context.Context) (queue.Recovery, error) {
		from := h.Now().Add(-recoveryDays * 24 * time.Hour)
		ms, err := h.Attempts.TeamMoments(ctx, team, from)
		if err != nil {
			return queue.Recovery{}, err
		}
		return queue.TeamRecovery(ms, from), nil
	}
	var r queue.Recovery
	var err error
	if h.teamRecoveries == nil {
		r, err = load(ctx)
	} else {
		// Every attempt of the team's last days is thousands of rows on a
		// busy team: read them once per team per teamRecoveryTTL, not per view.
		r, err = h.teamRecoveries.get(ctx, team, team, teamRecoveryTTL, load)
	}
	if err != nil {
		return queue.Recovery{}, false, err
	}
	return r, true, nil
}

func teamRecoveryView(r queue.Recovery, shown bool) views.TeamRecoveryView {
	return views.TeamRecoveryView{Shown: shown, Count: r.Count, Days: recoveryDays, Median: wait(r.Median), P90: wait(r.P90)}
}

// webhookActor is the user as the webhook rules see them.
func webhookActor(c *gin.Context, u *auth.User) notify.Actor {
	a := notify.Actor{Username: u.Username, Admin: u.Role == auth.RoleAdmin, IP: c.ClientIP(), Via: u.Via()}
	for _, m := range u.Teams {
		if m.Lead {
			a.LeadOf = append(a.LeadOf, m.Team)
		}
	}
	return a
}

// mayChangeWebhook reports whether the user leads the team or is an admin.
func mayChangeWebhook(u *auth.User, team string) bool {
	if u.Role == auth.RoleAdmin {
		return true
	}
	for _, m := range u.Teams {
		if m.Team == team && m.Lead {
			return true
		}
	}
	return false
}

// teamWebhookView is the team page's webhook card. The URL often carries
// the chat tool's secret: members who are not leads see its host only.
func (h *handler) teamWebhookView(ctx context.Context, u *auth.User, team string) (views.TeamWebhookView, error) {
	if h.Webhooks == nil {
		return views.TeamWebhookView{}, nil
	}
	w, err := h.Webhooks.Get(ctx, team)
	if err != nil {
		return views.TeamWebhookView{}, err
	}
	v := views.TeamWebhookView{Shown: true, URL: w.URL, UpdatedBy: w.UpdatedBy, UpdatedAt: stamp(w.UpdatedAt)}
	if mayChangeWebhook(u, team) {
		v.FormURL = "/teams/" + team + "/webhook"
	} else if u, err := notify.ValidateURL(w.URL); err == nil && w.URL != "" {
		v.URL = u.Scheme + "://" + u.Host + "/…"
	}
	for _, d := range w.Deliveries {
		row := views.WebhookDeliveryRow{Created: stamp(d.CreatedAt), Job: jobOfPayload(d.Payload), Ending: endingOfPayload(d.Payload)}
		switch {
		case d.DeliveredAt != nil:
			row.Outcome = fmt.Sprintf("delivered after %d %s", d.Attempts, plural(d.Attempts, "attempt", "attempts"))
		case d.FailedAt != nil:
			row.Outcome, row.Failed = fmt.Sprintf("given up after %d attempts: %s", d.Attempts, d.LastError), true
		case d.Attempts > 0:
			row.Outcome, row.Failed = fmt.Sprintf("attempt %d failed (%s); retrying", d.Attempts, d.LastError), true
		default:
			row.Outcome = "queued"
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	return v, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func jobOfPayload(raw []byte) string {
	var m queue.WebhookMessage
	_ = jsonInto(raw, &m)
	return m.Job
}

func endingOfPayload(raw []byte) string {
	var m queue.WebhookMessage
	_ = jsonInto(raw, &m)
	return string(m.Ending)
}
