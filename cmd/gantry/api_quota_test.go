package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/teams"
)

// apiClient calls the API with a person's token and checks every answer
// against the OpenAPI document the portal serves.
type apiClient struct {
	t    *testing.T
	u    *user
	spec *openAPISpec
}

// call sends body (a JSON string, or "" for none) and decodes the answer
// into out when out is not nil; it returns the status.
func (a apiClient) call(method, path, body string, out any) int {
	a.t.Helper()
	var b any
	if method != http.MethodGet {
		b = body
	}
	status, raw := a.u.do(method, path, b, "")
	a.spec.conforms(a.t, method, path, status, raw)
	if out != nil && raw != "" {
		require.NoError(a.t, json.Unmarshal([]byte(raw), out), "%s %s: %s", method, path, raw)
	}
	return status
}

// apiErr is the API's error shape as a script reads it.
type apiErr struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
}

type apiQuotaReq struct {
	ID        int64  `json:"id"`
	Team      string `json:"team"`
	GPUs      int64  `json:"gpus"`
	Status    string `json:"status"`
	Requester string `json:"requester"`
	Reason    string `json:"reason"`
	DecidedBy string `json:"decidedBy"`
	Comment   string `json:"comment"`
}

// TestQuotaStoryThroughAPI is the quota story the pages tell, told by
// scripts with personal API tokens: an admin creates a team with a ceiling,
// a researcher asks for GPUs, the lead sees it among the approvals and
// approves it, the team's ClusterQueue follows, the researcher reads the
// decision and a notification, the audit log has it all, the admin retires the team.
func TestQuotaStoryThroughAPI(t *testing.T) {
	ctx := context.Background()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "api" + hex.EncodeToString(b)
	// A cohort of its own, so the seeded teams other tests use are not disturbed.
	p := startTestPortal(t, "--cohort", "cohort-"+name)
	prov, err := teams.NewProvisioner(p.Env.RESTConfig, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = prov.Delete(context.Background(), name) })
	spec := fetchSpec(t, p.URL)
	as := func(who string) apiClient {
		u := p.signIn(t, who)
		return apiClient{t: t, u: p.withToken(t, who, apiToken(t, u, u.csrf())), spec: spec}
	}
	erin, alice, bob := as("erin"), as("alice"), as("bob")

	// The admin creates the team.
	var team struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		RetiredAt *string
		Ceilings  []struct {
			Flavor, Resource string
			GPUs             int64 `json:"gpus"`
		} `json:"ceilings"`
	}
	require.Equal(t, http.StatusCreated, erin.call(http.MethodPost, "/api/v1/teams", fmt.Sprintf(
		`{"name":%q,"displayName":"API team","costCenter":"CC-API","memberGroups":["vision-researchers"],"leadGroups":["vision-leads"],
		  "ceilings":[{"flavor":%q,"resource":%q,"gpus":4}]}`, name, e2eFlavor, e2eGPU), &team))
	assert.Equal(t, naming.Namespace(name), team.Namespace)
	_, err = p.Env.Kube.CoreV1().Namespaces().Get(ctx, naming.Namespace(name), metav1.GetOptions{})
	require.NoError(t, err, "the team's namespace exists")
	assert.Equal(t, int64(0), nominalGPUsOf(t, p, name), "a new team starts without GPUs")
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/teams/"+name, "", &team))
	require.Len(t, team.Ceilings, 1)
	assert.Equal(t, int64(4), team.Ceilings[0].GPUs, "the ceiling the admin set")

	var e apiErr
	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodGet, "/api/v1/teams", "", &e), "researchers do not manage teams")
	assert.Equal(t, "forbidden", e.Code)

	// A researcher asks; a mistake is answered field by field, in the page's words.
	e = apiErr{}
	require.Equal(t, http.StatusUnprocessableEntity, alice.call(http.MethodPost, "/api/v1/teams/"+name+"/quota-requests",
		fmt.Sprintf(`{"flavor":%q,"resource":%q,"gpus":0,"reason":""}`, e2eFlavor, e2eGPU), &e))
	assert.Equal(t, "invalid", e.Code)
	assert.Contains(t, e.Fields["gpus"], "how many GPUs")
	assert.Contains(t, e.Fields["reason"], "Say why")
	var req apiQuotaReq
	require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/"+name+"/quota-requests",
		fmt.Sprintf(`{"flavor":%q,"resource":%q,"gpus":2,"reason":"Two more GPUs for the ablation study"}`, e2eFlavor, e2eGPU), &req))
	assert.Equal(t, "open", req.Status)
	assert.Equal(t, "alice", req.Requester)

	var mine struct{ Requests []apiQuotaReq }
	require.Equal(t, http.StatusOK, alice.call(http.MethodGet, "/api/v1/quota-requests", "", &mine))
	require.NotEmpty(t, mine.Requests)
	assert.Equal(t, req.ID, mine.Requests[0].ID, "her newest request comes first")

	// Only leads and admins decide.
	e = apiErr{}
	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodPost, fmt.Sprintf("/api/v1/approvals/%d/decide", req.ID),
		`{"decision":"approve","comment":"mine"}`, &e))
	assert.Equal(t, "forbidden", e.Code)
	assert.Contains(t, e.Message, "Only team leads and Gantry admins")

	// The lead sees it with the figures the approvals page shows.
	var approvals struct {
		Requests []struct {
			apiQuotaReq
			Known      bool   `json:"known"`
			Nominal    int64  `json:"nominal"`
			NewNominal int64  `json:"newNominal"`
			Ceiling    *int64 `json:"ceiling"`
		}
	}
	require.Equal(t, http.StatusOK, bob.call(http.MethodGet, "/api/v1/approvals", "", &approvals))
	var found bool
	for _, a := range approvals.Requests {
		if a.ID != req.ID {
			continue
		}
		found = true
		assert.Equal(t, "Two more GPUs for the ablation study", a.Reason)
		assert.True(t, a.Known, "the cluster was read")
		assert.Equal(t, int64(0), a.Nominal)
		assert.Equal(t, int64(2), a.NewNominal)
		require.NotNil(t, a.Ceiling)
		assert.Equal(t, int64(4), *a.Ceiling)
	}
	require.True(t, found, "the request is on bob's approvals list: %+v", approvals.Requests)

	e = apiErr{}
	assert.Equal(t, http.StatusUnprocessableEntity, bob.call(http.MethodPost, fmt.Sprintf("/api/v1/approvals/%d/decide", req.ID),
		`{"decision":"approve","comment":""}`, &e), "a decision needs a comment")
	assert.Contains(t, e.Fields["comment"], "Add a comment")
	var decided apiQuotaReq
	require.Equal(t, http.StatusOK, bob.call(http.MethodPost, fmt.Sprintf("/api/v1/approvals/%d/decide", req.ID),
		`{"decision":"approve","comment":"Approved for the sprint"}`, &decided))
	assert.Equal(t, "approved", decided.Status)
	assert.Equal(t, "bob", decided.DecidedBy)
	assert.Equal(t, int64(2), nominalGPUsOf(t, p, name), "the ClusterQueue's quota was raised")

	// The researcher reads the decision, the grant and a message.
	var after struct {
		Requests []apiQuotaReq
		Grants   []struct {
			RequestID int64 `json:"requestId"`
			Nominal   int64 `json:"nominal"`
		}
	}
	require.Equal(t, http.StatusOK, alice.call(http.MethodGet, "/api/v1/quota-requests", "", &after))
	assert.Equal(t, "approved", after.Requests[0].Status)
	assert.Equal(t, "Approved for the sprint", after.Requests[0].Comment)
	var grantNominal int64 = -1
	for _, g := range after.Grants {
		if g.RequestID == req.ID {
			grantNominal = g.Nominal
		}
	}
	assert.Equal(t, int64(2), grantNominal, "the active grant shows the quota from the cluster")
	var inbox struct {
		Notifications []struct{ Text string }
		Unread        int
	}
	require.Equal(t, http.StatusOK, alice.call(http.MethodGet, "/api/v1/notifications", "", &inbox))
	require.NotEmpty(t, inbox.Notifications)
	assert.Contains(t, inbox.Notifications[0].Text, "bob approved your request")
	assert.Positive(t, inbox.Unread)
	require.Equal(t, http.StatusNoContent, alice.call(http.MethodPost, "/api/v1/notifications/read", "", nil))
	require.Equal(t, http.StatusOK, alice.call(http.MethodGet, "/api/v1/notifications", "", &inbox))
	assert.Zero(t, inbox.Unread, "all read")

	// A request withdrawn once cannot be withdrawn again.
	var second apiQuotaReq
	require.Equal(t, http.StatusCreated, alice.call(http.MethodPost, "/api/v1/teams/"+name+"/quota-requests",
		fmt.Sprintf(`{"flavor":%q,"resource":%q,"gpus":-1,"until":"2999-01-01","reason":"Handing one back"}`, e2eFlavor, e2eGPU), &second))
	require.Equal(t, http.StatusOK, alice.call(http.MethodPost, fmt.Sprintf("/api/v1/quota-requests/%d/withdraw", second.ID), "", &second))
	assert.Equal(t, "withdrawn", second.Status)
	e = apiErr{}
	assert.Equal(t, http.StatusForbidden, alice.call(http.MethodPost, fmt.Sprintf("/api/v1/quota-requests/%d/withdraw", second.ID), "", &e))
	assert.Contains(t, e.Message, "already decided or withdrawn")

	// The audit log tells the story, with who did each step.
	var audit struct {
		Entries []struct{ Actor, Action string }
	}
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/audit?team="+name+"&limit=100", "", &audit))
	actors := map[string]string{}
	for _, en := range audit.Entries {
		actors[en.Action] = en.Actor
	}
	assert.Equal(t, map[string]string{"team.create": "erin", "quota.request": "alice", "quota.approve": "bob", "quota.grant": "bob", "quota.withdraw": "alice"},
		pick(actors, "team.create", "quota.request", "quota.approve", "quota.grant", "quota.withdraw"))

	// The admin renames and retires the team.
	require.Equal(t, http.StatusOK, erin.call(http.MethodPut, "/api/v1/teams/"+name,
		`{"displayName":"API team, renamed","costCenter":"CC-API","memberGroups":["vision-researchers"],"leadGroups":["vision-leads"]}`, nil))
	var renamed struct{ DisplayName string }
	require.Equal(t, http.StatusOK, erin.call(http.MethodGet, "/api/v1/teams/"+name, "", &renamed))
	assert.Equal(t, "API team, renamed", renamed.DisplayName)
	require.Equal(t, http.StatusOK, erin.call(http.MethodPost, "/api/v1/teams/"+name+"/retire", "", &team))
	assert.NotNil(t, team.RetiredAt)
	cq, err := p.Env.Kueue.KueueV1beta2().ClusterQueues().Get(ctx, naming.ClusterQueue(name), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, cq.Spec.StopPolicy, "a retired team's queue admits nothing new")
	assert.Equal(t, "Hold", string(*cq.Spec.StopPolicy))
}

const (
	e2eFlavor = "h100-sxm-ib-training"
	e2eGPU    = "nvidia.com/gpu"
)

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func nominalGPUsOf(t *testing.T, p *testPortal, team string) int64 {
	t.Helper()
	cq, err := p.Env.Kueue.KueueV1beta2().ClusterQueues().Get(context.Background(), naming.ClusterQueue(team), metav1.GetOptions{})
	require.NoError(t, err)
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				if string(f.Name) == e2eFlavor && string(r.Name) == e2eGPU {
					return r.NominalQuota.Value()
				}
			}
		}
	}
	t.Fatalf("ClusterQueue of %s has no %s %s", team, e2eFlavor, e2eGPU)
	return 0
}
