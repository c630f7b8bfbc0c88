package web

import (
	"context"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// IdleReclaim is the idle GPU reclaim the job pages, the admin page and
// their API twins call.
type IdleReclaim interface {
	StateOf(ctx context.Context, l store.Launch, stopped bool) (reclaim.JobState, error)
	Keep(ctx context.Context, actor reclaim.Actor, l store.Launch) (time.Time, error)
	Exempt(ctx context.Context, actor reclaim.Actor, l store.Launch, reason string) error
	Unexempt(ctx context.Context, actor reclaim.Actor, l store.Launch) error
	PolicyFor(ctx context.Context, team string, kind catalog.Kind) (reclaim.Policy, error)
	Policies(ctx context.Context) ([]reclaim.Policy, error)
	SetPolicy(ctx context.Context, actor reclaim.Actor, p reclaim.Policy) (reclaim.Policy, error)
	Bounds() reclaim.Settings
}

// errNotIdleLead refuses an exemption to someone who does not lead the job's team.
var errNotIdleLead = problem.New("only the team's leads and admins can exempt a job from idle reclaim", problem.Problem{Kind: problem.Forbidden, Title: "Leads only",
	Detail: "Only the team's leads and admins can exempt a job from idle reclaim."})

// idleLead is the rule of idle exemptions (jobOf): the job's team's leads and admins.
func idleLead(u *auth.User, rec store.Launch) error {
	if !leads(u, rec.Team) {
		return errNotIdleLead
	}
	return nil
}

func reclaimActor(c *gin.Context, u *auth.User) reclaim.Actor {
	return reclaim.Actor{Username: u.Username, Via: u.Via(), IP: c.ClientIP()}
}

func percent(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) + "%" }

// policySentence says a policy in one sentence for the job page.
func policySentence(p reclaim.Policy) string {
	return fmt.Sprintf("Idle when every GPU sample stays under %s utilization for %s; then %s.", percent(p.Threshold), reclaim.Words(p.Window), p.Action())
}

// idleProps is the job page's idle card for the user.
func (h *handler) idleProps(ctx context.Context, u *auth.User, rec store.Launch, phase queue.Phase) (*views.JobIdleProps, error) {
	if h.Idle == nil || rec.DeletedAt != nil {
		return nil, nil
	}
	st, err := h.Idle.StateOf(ctx, rec, phase == queue.PhaseStopped)
	if err != nil {
		return nil, err
	}
	base := jobURL(rec.Team, rec.Name) + "/idle"
	p := &views.JobIdleProps{Policy: policySentence(st.Policy), CanExempt: leads(u, rec.Team),
		ExemptURL: base + "/exempt", UnexemptURL: base + "/unexempt"}
	if w := st.Warning; w != nil {
		p.Warning = fmt.Sprintf("Its GPUs have been under %s utilization since %s. It will be stopped at %s; its workspace is kept.",
			percent(st.Policy.Threshold), w.Since.UTC().Format("15:04 UTC"), w.StopAt.UTC().Format("15:04 UTC"))
		p.KeepURL, p.KeepLabel = base+"/keep", "Keep it running for "+reclaim.Words(st.Policy.Extension)
	}
	if st.Flagged {
		p.Flagged = fmt.Sprintf("Its GPUs have stayed under %s utilization for %s. Training is never stopped for idleness: check that it is not stuck.",
			percent(st.Policy.Threshold), reclaim.Words(st.Policy.Window))
	}
	if e := st.Stopped; e != nil {
		p.Reclaimed = reclaim.Reason(*e)
	} else if e := st.Scaled; e != nil {
		p.Reclaimed = reclaim.Reason(*e)
	}
	if hd := st.Hold; hd != nil {
		p.Exempt = true
		if hd.Exempt {
			p.Hold = fmt.Sprintf("Exempt from idle reclaim by %s: %s", hd.HeldBy, hd.Reason)
		} else if hd.Until != nil {
			p.Hold = fmt.Sprintf("Kept running by %s until %s.", hd.HeldBy, hd.Until.UTC().Format("2006-01-02 15:04 UTC"))
		}
	}
	return p, nil
}

// idleNow is whether the job is idle now under its policy's threshold.
func (h *handler) idleThreshold(ctx context.Context, rec store.Launch) (float64, bool) {
	if h.Idle == nil {
		return 0, false
	}
	p, err := h.Idle.PolicyFor(ctx, rec.Team, catalog.Kind(rec.Kind))
	if err != nil {
		return 0, false
	}
	return p.Threshold, true
}
