package web

import (
	"encoding/json"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/queue"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/views"
)

// errNotANotebook is a share action on a job that is not a notebook.
var errNotANotebook = problem.New("not a notebook", problem.Problem{Kind: problem.BadRequest, Title: "Not possible for this job",
	Detail: "Only notebooks are opened and shared this way."})

// errNotAnEndpoint is a key action on a job that is not an inference endpoint.
var errNotAnEndpoint = fmt.Errorf("not an inference endpoint: %w", store.ErrNotFound)

// notebook is the rule of sharing (jobOf): only notebooks are shared.
func notebook(_ *auth.User, rec store.Launch) error {
	if catalog.Kind(rec.Kind) != catalog.KindNotebook {
		return fmt.Errorf("share %s: %w", rec.Name, errNotANotebook)
	}
	return nil
}

// endpointKeyOf is the endpoint the path names and the id of its key the
// path's :id names; on false the failure page or API error has been sent.
func (h *handler) endpointKeyOf(c *gin.Context) (*auth.User, store.Launch, int64, bool) {
	u, rec, ok := h.jobOf(c, endpoint)
	if !ok {
		return u, rec, 0, false
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, fmt.Errorf("revoke key %q: %w", c.Param("id"), store.ErrNotFound))
		return u, rec, 0, false
	}
	return u, rec, id, true
}

// endpoint is the rule of endpoint keys (jobOf): only inference endpoints
// that are not deleted have keys.
func endpoint(_ *auth.User, rec store.Launch) error {
	if catalog.Kind(rec.Kind) != catalog.KindInference || rec.DeletedAt != nil {
		return fmt.Errorf("keys of %s/%s: %w", rec.Team, rec.Name, errNotAnEndpoint)
	}
	return nil
}

// accessPanels fills the job page's ways in through the portal: Open and
// sharing for a notebook; URL, curl example, figures and keys for an
// endpoint. newKey is a key just made, shown this once.
func (h *handler) accessPanels(c *gin.Context, rec store.Launch, st launch.Status, p *views.JobProps, newKey string) error {
	if h.Proxy == nil || st.Phase == queue.PhaseDeleted {
		return nil
	}
	u, _ := auth.CurrentUser(c)
	ctx := c.Request.Context()
	switch catalog.Kind(rec.Kind) {
	case catalog.KindNotebook:
		shared, err := h.Proxy.Access.Shared(ctx, rec.Team, rec.Name)
		if err != nil {
			return err
		}
		panel := &views.NotebookOpenPanel{OpenURL: notebookOpenURL(rec.Team, rec.Name), Shared: shared,
			MayOpen: u.Username == rec.Owner || shared && canOpenAsMember(u, rec.Team)}
		if u.Username == rec.Owner {
			panel.ShareURL = jobURL(rec.Team, rec.Name) + "/share"
		}
		p.Open = panel
	case catalog.KindInference:
		keys, err := h.Proxy.Access.Keys(ctx, rec.Team, rec.Name)
		if err != nil {
			return err
		}
		base := h.PublicURL.String() + endpointURL(rec.Team, rec.Name)
		panel := &views.EndpointPanel{URL: base, NewKey: newKey, KeysURL: jobURL(rec.Team, rec.Name) + "/keys",
			Curl: endpointCurl(base, newKey, modelOf(rec))}
		now := h.Now()
		for _, k := range keys {
			row := views.EndpointKeyRow{ID: k.ID, Label: k.Label, Prefix: k.Prefix, CreatedBy: k.CreatedBy,
				Created: k.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"), Expires: k.ExpiresAt.UTC().Format("2006-01-02"), State: keyState(k, now)}
			if k.RevokedAt == nil {
				row.RevokeURL = fmt.Sprintf("%s/keys/%d/revoke", jobURL(rec.Team, rec.Name), k.ID)
			}
			panel.Keys = append(panel.Keys, row)
		}
		s := h.Proxy.Usage.Stats(rec.Team, rec.Name)
		panel.Requests = strconv.FormatInt(s.Requests, 10)
		panel.ErrorRate = fmt.Sprintf("%.1f%% (%d failed)", 100*s.ErrorRate, s.Errors)
		panel.LatencyP50, panel.LatencyP99 = latencyWords(s.P50, s.Requests), latencyWords(s.P99, s.Requests)
		panel.StatsCaveat = "Requests through the portal since this portal replica started; latency is to the end of each answer, streams included."
		p.Endpoint = panel
	}
	return nil
}

func canOpenAsMember(u *auth.User, team string) bool { return slices.Contains(teamNames(u), team) }

func keyState(k store.EndpointKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		by := ""
		if k.RevokedBy != nil {
			by = " by " + *k.RevokedBy
		}
		return "revoked" + by
	case !now.Before(k.ExpiresAt):
		return "expired"
	}
	return "active"
}

func latencyWords(d time.Duration, requests int64) string {
	if requests == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// endpointCurl is a ready-to-paste call of the endpoint: a streamed
// completion, with the key just made or a placeholder for one.
func endpointCurl(base, key, model string) string {
	if key == "" {
		key = "$GANTRY_ENDPOINT_KEY"
	}
	if model == "" {
		model = "default"
	}
	return fmt.Sprintf(`curl -N %sv1/completions \
  -H "Authorization: Bearer %s" \
  -H "Content-Type: application/json" \
  -d '{"model": "%s", "prompt": "Say hello", "max_tokens": 32, "stream": true}'`, base, key, model)
}

// modelOf is the model the endpoint was launched with, as its curl example names it.
func modelOf(rec store.Launch) string {
	var params map[string]string
	_ = json.Unmarshal(rec.Parameters, &params)
	return params[naming.FieldModel]
}
