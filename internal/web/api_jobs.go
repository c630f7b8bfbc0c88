package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/queue"
)

// apiLaunchRequest is the body of POST /api/v1/teams/{team}/jobs.
type apiLaunchRequest struct {
	Template   string            `json:"template"`
	Version    int               `json:"version"`
	Parameters map[string]string `json:"parameters"`
	// LaunchID makes retries safe; the server makes one when it is empty.
	LaunchID string `json:"launchId"`
}

// apiJob is a job as the API shows it. Phase is one of queue.Phase:
// creating right after a launch, until the portal's cache has the job;
// then queued, quota reserved, admitted, creating, running, succeeded,
// failed, preempted, evicted, stopped or deleted.
type apiJob struct {
	Name     string            `json:"name"`
	Team     string            `json:"team"`
	URL      string            `json:"url"`
	Kind     string            `json:"kind,omitempty"`
	Phase    queue.Phase       `json:"phase,omitempty"`
	Message  string            `json:"message,omitempty"`
	Owner    string            `json:"owner,omitempty"`
	Template string            `json:"template,omitempty"`
	Version  int               `json:"version,omitempty"`
	Params   map[string]string `json:"parameters,omitempty"`
	LaunchID string            `json:"launchId,omitempty"`
	Existing bool              `json:"existing,omitempty"`
	// CreatedOutsideGantry is true for a workload made in the team's
	// namespace without the portal (kubectl): no owner, template or parameters.
	CreatedOutsideGantry bool `json:"createdOutsideGantry,omitempty"`
	// Attempts lists every attempt of the job, oldest first (GET only).
	Attempts []apiAttempt `json:"attempts,omitempty"`
	// Stale is set while the Kubernetes API server does not answer (GET only).
	Stale *apiStale `json:"stale,omitempty"`
}

// apiJobCreate launches a job from a template, with the form's validation.
func (h *handler) apiJobCreate(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	var req apiLaunchRequest
	if err := bindJSON(c, &req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.fail(c, fmt.Errorf("launch request: %w", err))
			return
		}
		c.JSON(http.StatusBadRequest, gin.H{"error": "Bad request", "code": "bad_request", "message": "Send a JSON object with template, parameters and optionally version and launchId."})
		return
	}
	if req.LaunchID == "" {
		req.LaunchID = launch.NewLaunchID()
	}
	team := c.Param("team")
	res, err := h.launchAs(c, u, launch.Request{
		Team: team, Template: req.Template, Version: req.Version, Values: req.Parameters, LaunchID: req.LaunchID,
	})
	if err != nil {
		if errs, status := launchProblem(err); errs != nil {
			c.JSON(status, gin.H{"error": "The job was not launched", "code": apiCode(err, status), "message": errs.Error(), "fields": errs, "request_id": requestIDOf(c)})
			return
		}
		h.fail(c, err)
		return
	}
	status := http.StatusCreated
	if res.Existing {
		status = http.StatusOK
	}
	c.JSON(status, apiJob{Name: res.Name, Team: res.Team, URL: h.PublicURL.String() + jobURL(res.Team, res.Name),
		Kind: string(res.Kind), LaunchID: req.LaunchID, Existing: res.Existing})
}

// apiJobGet returns a job's record and status.
func (h *handler) apiJobGet(c *gin.Context) {
	rec, st, err := h.jobWithStatus(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	out := apiJob{Name: rec.Name, Team: rec.Team, URL: h.PublicURL.String() + jobURL(rec.Team, rec.Name), Kind: rec.Kind,
		Phase: st.Phase, Message: st.Message, Owner: rec.Owner, Template: rec.Template, Version: rec.TemplateVersion, LaunchID: rec.LaunchID}
	_ = jsonInto(rec.Parameters, &out.Params)
	out.CreatedOutsideGantry = launch.IsOutside(rec)
	h.readJobTogether(c, rec)
	attempts, err := h.jobAttempts(c.Request.Context(), rec.Namespace, rec.Name)
	if err != nil {
		h.fail(c, err)
		return
	}
	out.Attempts = apiAttemptsOf(attempts)
	out.Stale = h.apiStaleOf()
	c.JSON(http.StatusOK, out)
}

// apiJobDelete deletes a job as the caller.
func (h *handler) apiJobDelete(c *gin.Context) {
	u, rec, ok := h.jobOf(c)
	if !ok {
		return
	}
	if err := h.Launcher.Delete(c.Request.Context(), actorOf(c, u), rec.Team, rec.Name); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
