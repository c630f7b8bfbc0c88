package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/launch"
	"github.com/gantry-dev/gantry/internal/notify"
	"github.com/gantry-dev/gantry/internal/reclaim"
	"github.com/gantry-dev/gantry/internal/store"
	"github.com/gantry-dev/gantry/internal/web"
	"github.com/gantry-dev/gantry/static"
)

// routes lists every route of the portal's router with every optional
// part switched on; the collaborators are never called.
func routes(t *testing.T) gin.RoutesInfo {
	t.Helper()
	return everything(t, func(d *web.Deps) { d.Logs = &kube.PodLogs{} }).Routes()
}

// everything is the portal's router with every optional part switched on;
// with changes, for the parts the matrix does not call yet.
func everything(t *testing.T, with ...func(*web.Deps)) *gin.Engine {
	t.Helper()
	d := web.Deps{
		PublicURL:  &url.URL{Scheme: "http", Host: "gantry.test"},
		CSRFKey:    make([]byte, 32),
		Store:      (*store.Store)(nil),
		Sessions:   scs.New(),
		Login:      (*auth.OIDC)(nil),
		Auth:       &auth.Authenticator{},
		Audit:      audit.New(nil, nil),
		Overviews:  nil,
		Quota:      &web.QuotaDeps{},
		Launcher:   &launch.Service{},
		Jobs:       launch.Reader{},
		Status:     &web.StatusDeps{},
		Catalog:    &catalogadmin.Admin{},
		Proxy:      &web.ProxyDeps{},
		Idle:       &reclaim.Reclaimer{},
		Acceptance: &acceptance.Service{},
		Attempts:   (*store.Store)(nil),
		Webhooks:   notify.Webhooks{},
		Static:     static.FS,
		Registry:   prometheus.NewRegistry(),
		Log:        slog.New(slog.DiscardHandler),
	}
	for _, change := range with {
		change(&d)
	}
	h, err := web.NewHandler(d)
	require.NoError(t, err)
	engine, ok := h.(*gin.Engine)
	require.True(t, ok, "the portal's handler is a gin engine")
	return engine
}

// access is who a route lets through.
type access int

const (
	public     access = iota // anyone, signed in or not
	signedIn                 // any signed-in user
	withTeam                 // signed-in users in a team (the page is about their team)
	member                   // members of the team in the path (or the form), and admins
	leads                    // leads of a team, and admins
	teamLead                 // leads of the team in the path, and admins; its other members are refused
	adminsOnly               // Gantry admins
)

// answer is the class of an answer a person would notice.
type answer string

const (
	served   answer = "served"     // 2xx or a redirect elsewhere than sign-in; 4xx of the action's own (400, 409, 422)
	toSignIn answer = "sign in"    // redirect to /auth/login, or 401 for the API
	refused  answer = "refused"    // 403
	hidden   answer = "not found"  // 404: a foreign team's things, or a target that does not exist
	unknown  answer = "unexpected" // 5xx, 405 and the like
)

func classify(status int, location string) answer {
	switch {
	case status == http.StatusUnauthorized:
		return toSignIn
	case status >= 300 && status < 400 && strings.HasPrefix(location, "/auth/login"):
		return toSignIn
	case status < 400:
		return served
	case status == http.StatusForbidden:
		return refused
	case status == http.StatusNotFound:
		return hidden
	case status == http.StatusBadRequest, status == http.StatusConflict, status == http.StatusUnprocessableEntity:
		return served
	default:
		return unknown
	}
}

// matrixRoute says who may use a route and how to call it harmlessly.
type matrixRoute struct {
	access access
	// form is the body of a POST (the CSRF token is added); json of an API write.
	form url.Values
	json string
	// absent: the target does not exist (so that nothing shared is changed);
	// whoever may use the route gets 404.
	absent bool
	// foreign is what a non-member gets on a member route; empty means 404
	// (another team's things are hidden). Launching is refused instead.
	foreign answer
	// browserOnly: an API token is refused (403); only the session may.
	browserOnly bool
	// custom, when set, is the answer instead of the rules of access (the
	// proxies decide by owner and sharing, or by endpoint key).
	custom func(p person, team, method string) answer
}

// matrixJobOwners launch the job each team's pass aims at.
var matrixJobOwners = map[string]string{"vision": "alice", "nlp": "carol"}

// notebookOpen is who gets through to a notebook: its owner (the matrix's
// job is a training job, so the owner is told only notebooks open: 400),
// no one else until the owner shares it; anonymous people sign in first.
func notebookOpen(p person, team, _ string) answer {
	switch {
	case p.name == "":
		return toSignIn
	case p.name == matrixJobOwners[team]:
		return served
	}
	return refused
}

// endpointCall: without an endpoint key everyone is refused with 401.
func endpointCall(person, string, string) answer { return toSignIn }

// expectations covers every route of the router; a route missing here fails
// the test. In paths, :team is the team of the pass, :name its job (a
// template or team name on admin pages, see fillPath), :id one that does not exist.
var expectations = map[string]matrixRoute{
	"GET /healthz":                    {access: public},
	"GET /readyz":                     {access: public},
	"GET /metrics":                    {access: public},
	"GET /static/*filepath":           {access: public},
	"HEAD /static/*filepath":          {access: public},
	"GET /auth/login":                 {access: public},
	"GET /auth/callback":              {access: public}, // 400 without a login in progress
	"POST /auth/logout":               {access: signedIn, form: url.Values{}},
	"GET /":                           {access: signedIn},
	"GET /profile":                    {access: signedIn},
	"POST /profile/tokens":            {access: signedIn, form: url.Values{"name": {""}}},
	"POST /profile/tokens/:id/revoke": {access: signedIn, form: url.Values{}, absent: true},
	"GET /admin/tokens":               {access: adminsOnly},
	"POST /admin/tokens/:id/revoke":   {access: adminsOnly, form: url.Values{}, absent: true},
	"GET /quota-requests":             {access: signedIn},
	// Members file a real request (the database is this test's own); others
	// are told to choose one of their teams.
	"POST /quota-requests": {access: signedIn, form: url.Values{"team": {":team"}, "flavor": {"h100-sxm-ib-training"},
		"resource": {"nvidia.com/gpu"}, "delta": {"1"}, "reason": {"authorization matrix"}}},
	"POST /quota-requests/:id/withdraw":         {access: signedIn, form: url.Values{}, absent: true},
	"GET /approvals":                            {access: signedIn},
	"POST /approvals/:id/decide":                {access: leads, form: url.Values{"decision": {"reject"}, "comment": {"authorization matrix"}}, absent: true},
	"GET /notifications":                        {access: signedIn},
	"POST /notifications/read":                  {access: signedIn, form: url.Values{}},
	"GET /admin/teams":                          {access: adminsOnly},
	"POST /admin/teams":                         {access: adminsOnly, form: url.Values{"name": {"Not A Valid Name"}}},
	"GET /admin/teams/:name":                    {access: adminsOnly, absent: true},
	"POST /admin/teams/:name":                   {access: adminsOnly, form: url.Values{"displayName": {""}}, absent: true},
	"POST /admin/teams/:name/retire":            {access: adminsOnly, form: url.Values{}, absent: true},
	"GET /admin/audit":                          {access: adminsOnly},
	"GET /launch":                               {access: signedIn},
	"GET /launch/:template":                     {access: signedIn},
	"POST /launch/:template":                    {access: member, foreign: refused, form: url.Values{"team": {":team"}, "gpus": {"99"}}},
	"GET /jobs":                                 {access: signedIn},
	"GET /teams/:team/jobs/:name":               {access: member},
	"GET /teams/:team/jobs/:name/status":        {access: member},
	"GET /teams/:team/jobs/:name/manifest":      {access: member},
	"GET /teams/:team/jobs/:name/queue":         {access: member},
	"GET /teams/:team/jobs/:name/logs":          {access: member},
	"GET /teams/:team/jobs/:name/logs/follow":   {access: member},
	"GET /teams/:team/jobs/:name/logs/download": {access: member},
	"POST /teams/:team/jobs/:name/stop":         {access: member, form: url.Values{}},
	"POST /teams/:team/jobs/:name/resume":       {access: member, form: url.Values{}},
	"POST /teams/:team/jobs/:name/scale":        {access: member, form: url.Values{"replicas": {"-1"}}},
	"POST /teams/:team/jobs/:name/delete":       {access: member, form: url.Values{}},
	// The matrix's job is a training job: keeping it running is refused
	// with 409 (served), an exemption without a reason with 422.
	"POST /teams/:team/jobs/:name/idle/keep":            {access: member, form: url.Values{}},
	"POST /teams/:team/jobs/:name/idle/exempt":          {access: teamLead, form: url.Values{"reason": {""}}},
	"POST /teams/:team/jobs/:name/idle/unexempt":        {access: teamLead, form: url.Values{}},
	"GET /admin/idle":                                   {access: adminsOnly},
	"POST /admin/idle":                                  {access: adminsOnly, form: url.Values{"kind": {"notebook"}, "threshold": {"-1"}}},
	"GET /team":                                         {access: withTeam},
	"GET /teams/:team":                                  {access: member},
	"GET /teams/:team/ledger.csv":                       {access: member},
	"POST /teams/:team/webhook":                         {access: teamLead, form: url.Values{"url": {"ftp://not-a-webhook"}}},
	"GET /admin/cluster":                                {access: adminsOnly},
	"GET /admin/templates":                              {access: adminsOnly},
	"GET /admin/templates/new":                          {access: adminsOnly},
	"POST /admin/templates":                             {access: adminsOnly, form: url.Values{"yaml": {"not: a template"}}},
	"POST /admin/templates/preview":                     {access: adminsOnly, form: url.Values{"yaml": {"not: a template"}}},
	"POST /admin/templates/import":                      {access: adminsOnly, form: url.Values{"yaml": {"not: a template"}}},
	"GET /admin/templates/:name":                        {access: adminsOnly},
	"GET /admin/templates/:name/diff":                   {access: adminsOnly},
	"GET /admin/templates/:name/export":                 {access: adminsOnly},
	"POST /admin/templates/:name/publish":               {access: adminsOnly, form: url.Values{"version": {"999"}}, absent: true},
	"POST /admin/templates/:name/retire":                {access: adminsOnly, form: url.Values{}, absent: true},
	"POST /admin/templates/:name/duplicate":             {access: adminsOnly, form: url.Values{"newName": {"Not Valid"}}},
	"GET /admin/prices":                                 {access: adminsOnly},
	"POST /admin/prices":                                {access: adminsOnly, form: url.Values{"price": {"-1"}}},
	"GET /admin/allowlist":                              {access: adminsOnly},
	"POST /admin/allowlist":                             {access: adminsOnly, form: url.Values{"registries": {""}}},
	"GET /api/v1/me":                                    {access: signedIn},
	"GET /api/v1/templates":                             {access: signedIn},
	"GET /api/v1/tokens":                                {access: signedIn},
	"POST /api/v1/tokens":                               {access: signedIn, json: `{"name":""}`, browserOnly: true},
	"POST /api/v1/tokens/:id/revoke":                    {access: signedIn, absent: true},
	"GET /api/v1/admin/tokens":                          {access: adminsOnly},
	"POST /api/v1/admin/tokens/:id/revoke":              {access: adminsOnly, absent: true},
	"POST /api/v1/teams/:team/jobs/:name/stop":          {access: member},
	"POST /api/v1/teams/:team/jobs/:name/resume":        {access: member},
	"POST /api/v1/teams/:team/jobs/:name/scale":         {access: member, json: `{"replicas":-1}`},
	"GET /api/v1/teams/:team/jobs":                      {access: member},
	"POST /api/v1/teams/:team/jobs":                     {access: member, foreign: refused, json: `{"template":"pytorch-train","parameters":{"gpus":"99"}}`},
	"GET /api/v1/teams/:team/jobs/:name":                {access: member},
	"DELETE /api/v1/teams/:team/jobs/:name":             {access: member},
	"GET /api/v1/teams/:team/status":                    {access: member},
	"GET /api/v1/teams/:team/ledger":                    {access: member},
	"GET /api/v1/teams/:team/webhook":                   {access: teamLead},
	"PUT /api/v1/teams/:team/webhook":                   {access: teamLead, json: `{"url":"ftp://not-a-webhook"}`},
	"GET /api/v1/cluster/status":                        {access: adminsOnly},
	"GET /api/v1/teams/:team/jobs/:name/status":         {access: member},
	"GET /api/v1/teams/:team/jobs/:name/logs":           {access: member},
	"GET /api/v1/teams/:team/jobs/:name/idle":           {access: member},
	"POST /api/v1/teams/:team/jobs/:name/idle/keep":     {access: member},
	"POST /api/v1/teams/:team/jobs/:name/idle/exempt":   {access: teamLead, json: `{"reason":""}`},
	"POST /api/v1/teams/:team/jobs/:name/idle/unexempt": {access: teamLead},
	"GET /api/v1/admin/idle-policies":                   {access: adminsOnly},
	"PUT /api/v1/admin/idle-policies":                   {access: adminsOnly, json: `{"kind":"notebook","thresholdPercent":-1}`},
	"GET /api/v1/openapi.json":                          {access: public},
	"GET /api/v1/quota-requests":                        {access: signedIn},
	// Members file a real request; others are told to choose one of their teams.
	"POST /api/v1/teams/:team/quota-requests": {access: signedIn,
		json: `{"flavor":"h100-sxm-ib-training","resource":"nvidia.com/gpu","gpus":1,"reason":"authorization matrix"}`},
	"POST /api/v1/quota-requests/:id/withdraw":      {access: signedIn, absent: true},
	"GET /api/v1/approvals":                         {access: signedIn},
	"POST /api/v1/approvals/:id/decide":             {access: leads, json: `{"decision":"reject","comment":"authorization matrix"}`, absent: true},
	"GET /api/v1/notifications":                     {access: signedIn},
	"POST /api/v1/notifications/read":               {access: signedIn},
	"GET /api/v1/teams":                             {access: adminsOnly},
	"POST /api/v1/teams":                            {access: adminsOnly, json: `{"name":"Not A Valid Name"}`},
	"GET /api/v1/teams/:team":                       {access: adminsOnly},
	"PUT /api/v1/teams/:team":                       {access: adminsOnly, json: `{"displayName":""}`}, // refused for its missing groups
	"POST /api/v1/teams/:team/retire":               {access: adminsOnly, absent: true},
	"GET /api/v1/audit":                             {access: adminsOnly},
	"GET /api/v1/admin/templates":                   {access: adminsOnly},
	"POST /api/v1/templates/preview":                {access: adminsOnly, json: `{"yaml":"not: a template"}`},
	"POST /api/v1/templates/:name/duplicate":        {access: adminsOnly, json: `{"newName":"Not Valid"}`},
	"POST /api/v1/templates/import":                 {access: adminsOnly, json: `{"yaml":"not: a template"}`},
	"GET /api/v1/templates/:name/versions":          {access: adminsOnly},
	"GET /api/v1/templates/:name/versions/:version": {access: adminsOnly},
	"GET /api/v1/templates/:name/diff":              {access: adminsOnly},
	"POST /api/v1/templates/:name/publish":          {access: adminsOnly, json: `{"version":999}`, absent: true},
	"POST /api/v1/templates/:name/retire":           {access: adminsOnly, absent: true},
	"GET /api/v1/prices":                            {access: adminsOnly},
	"POST /api/v1/prices":                           {access: adminsOnly, json: `{"usdPerHour":"-1"}`},
	"GET /api/v1/allowlist":                         {access: adminsOnly},
	// Acceptance: the page of the H100 pool, whose seeded definition names
	// team vision; starts and definitions aim at a pool without one (422).
	"GET /admin/acceptance":                    {access: adminsOnly},
	"POST /admin/acceptance":                   {access: adminsOnly, form: url.Values{"pool": {""}}},
	"GET /pools/:pool/acceptance":              {access: member},
	"POST /pools/:pool/acceptance-runs":        {access: signedIn, form: url.Values{}},
	"GET /acceptance-runs/:id":                 {access: signedIn, absent: true},
	"GET /acceptance-runs/:id/steps":           {access: signedIn, absent: true},
	"GET /acceptance-runs/:id/export":          {access: signedIn, absent: true},
	"GET /api/v1/acceptance-definitions":       {access: adminsOnly},
	"PUT /api/v1/acceptance-definitions/:pool": {access: adminsOnly, json: `{"team":""}`},
	"POST /api/v1/acceptance-runs":             {access: signedIn, json: `{"pool":"no-such-pool"}`},
	"GET /api/v1/acceptance-runs":              {access: signedIn},
	"GET /api/v1/acceptance-runs/:id":          {access: signedIn, absent: true},
	"GET /api/v1/acceptance-runs/:id/markdown": {access: signedIn, absent: true},
	"PUT /api/v1/allowlist":                    {access: adminsOnly, json: `{"registries":["https://not a registry"]}`},
	// Accepted results: only the job's owner, its team's leads and admins
	// judge a result; in the seeded teams every member is one or the other.
	// The verdicts and months sent are invalid, so nothing is recorded.
	"POST /teams/:team/jobs/:name/verdict":        {access: member, form: url.Values{"verdict": {"maybe"}}},
	"POST /teams/:team/acceptance-rule":           {access: teamLead, form: url.Values{"acceptSucceeded": {"off"}}},
	"GET /admin/shared-costs":                     {access: adminsOnly},
	"POST /admin/shared-costs":                    {access: adminsOnly, form: url.Values{"month": {"not a month"}}},
	"POST /admin/cost-comparison":                 {access: adminsOnly, form: url.Values{"month": {"not a month"}}},
	"POST /api/v1/teams/:team/jobs/:name/verdict": {access: member, json: `{"verdict":"maybe"}`},
	"PUT /api/v1/teams/:team/acceptance-rule":     {access: teamLead, json: `{}`},
	"GET /api/v1/teams/:team/cost":                {access: member},
	"GET /api/v1/admin/shared-costs":              {access: adminsOnly},
	"PUT /api/v1/admin/shared-costs":              {access: adminsOnly, json: `{"month":"not a month"}`},
	"PUT /api/v1/admin/cost-comparison":           {access: adminsOnly, json: `{"month":"not a month"}`},
	"GET /api/v1/cluster/weekly-hours":            {access: adminsOnly},
	// The matrix's jobs are training jobs: share answers members 400 and
	// the key routes answer 404, as for a job that is no endpoint.
	"GET /teams/:team/jobs/:name/open": {access: signedIn, custom: func(p person, _, _ string) answer {
		if p.name == "" {
			return toSignIn
		}
		return served
	}},
	"POST /teams/:team/jobs/:name/share":                  {access: member, form: url.Values{"shared": {"1"}}},
	"POST /teams/:team/jobs/:name/keys":                   {access: member, form: url.Values{"label": {"matrix"}, "days": {"1"}}, absent: true},
	"POST /teams/:team/jobs/:name/keys/:id/revoke":        {access: member, form: url.Values{}, absent: true},
	"POST /api/v1/teams/:team/jobs/:name/share":           {access: member, json: `{"shared":true}`},
	"GET /api/v1/teams/:team/jobs/:name/keys":             {access: member, absent: true},
	"POST /api/v1/teams/:team/jobs/:name/keys":            {access: member, json: `{"label":"matrix"}`, absent: true},
	"POST /api/v1/teams/:team/jobs/:name/keys/:id/revoke": {access: member, absent: true},
	"GET /teams/:team/jobs/:name/open/*path":              {access: member, custom: notebookOpen},
	"GET /endpoints/:team/:name":                          {access: public, custom: endpointCall},
	"GET /endpoints/:team/:name/*path":                    {access: public, custom: endpointCall},
	"HEAD /teams/:team/jobs/:name/open/*path":             {access: member, custom: notebookOpen},
	"HEAD /endpoints/:team/:name":                         {access: public, custom: endpointCall},
	"HEAD /endpoints/:team/:name/*path":                   {access: public, custom: endpointCall},
	"POST /teams/:team/jobs/:name/open/*path":             {access: member, custom: notebookOpen},
	"POST /endpoints/:team/:name":                         {access: public, custom: endpointCall},
	"POST /endpoints/:team/:name/*path":                   {access: public, custom: endpointCall},
	"PUT /teams/:team/jobs/:name/open/*path":              {access: member, custom: notebookOpen},
	"PUT /endpoints/:team/:name":                          {access: public, custom: endpointCall},
	"PUT /endpoints/:team/:name/*path":                    {access: public, custom: endpointCall},
	"PATCH /teams/:team/jobs/:name/open/*path":            {access: member, custom: notebookOpen},
	"PATCH /endpoints/:team/:name":                        {access: public, custom: endpointCall},
	"PATCH /endpoints/:team/:name/*path":                  {access: public, custom: endpointCall},
	"DELETE /teams/:team/jobs/:name/open/*path":           {access: member, custom: notebookOpen},
	"DELETE /endpoints/:team/:name":                       {access: public, custom: endpointCall},
	"DELETE /endpoints/:team/:name/*path":                 {access: public, custom: endpointCall},
	"OPTIONS /teams/:team/jobs/:name/open/*path":          {access: member, custom: notebookOpen},
	"OPTIONS /endpoints/:team/:name":                      {access: public, custom: endpointCall},
	"OPTIONS /endpoints/:team/:name/*path":                {access: public, custom: endpointCall},
}

// person is a seeded user of the dev IdP and deploy/local/teams.yaml.
type person struct {
	name  string // "" is anonymous
	team  string // "" for none
	lead  bool
	admin bool
}

var people = []person{
	{name: "alice", team: "vision"},
	{name: "bob", team: "vision", lead: true},
	{name: "carol", team: "nlp"},
	{name: "dave", team: "nlp", lead: true},
	{name: "erin", admin: true},
	{name: "frank"},
	{},
}

func (p person) label() string {
	if p.name == "" {
		return "anonymous"
	}
	return p.name
}

// via is how a request is authenticated: the browser session (HTML and the
// API alike) or a personal API token (the API only).
type via string

const (
	browser via = "browser"
	token   via = "token"
)

// want is the answer a person should get on a route about team.
func (r matrixRoute) want(p person, team, method string, by via) answer {
	if r.custom != nil {
		return r.custom(p, team, method)
	}
	if r.access == public {
		return served
	}
	switch {
	case p.name == "" && by == token:
		return toSignIn // an unknown token
	case p.name == "" && method != http.MethodGet:
		return refused // the CSRF check refuses a write without a session
	case p.name == "":
		return toSignIn
	case by == token && p.team == "" && !p.admin:
		return toSignIn // a token stops working when its owner is in no team and not an admin
	case by == token && r.browserOnly:
		return refused
	}
	switch r.access {
	case adminsOnly:
		if !p.admin {
			return refused
		}
	case leads:
		if !p.admin && !p.lead {
			return refused
		}
	case withTeam:
		if p.team == "" {
			return hidden
		}
	case teamLead:
		if !p.admin && p.team != team {
			return hidden
		}
		if !p.admin && !p.lead {
			return refused
		}
	case member:
		if !p.admin && p.team != team {
			if r.foreign != "" {
				return r.foreign
			}
			return hidden
		}
	}
	if r.absent {
		return hidden
	}
	return served
}

// matrixJob is a real job a route about a team aims at.
type matrixJob struct{ team, owner, name string }

func TestAuthorizationMatrix(t *testing.T) {
	all := routes(t)
	var missing []string
	for _, r := range all {
		if _, ok := expectations[r.Method+" "+r.Path]; !ok {
			missing = append(missing, r.Method+" "+r.Path)
		}
	}
	require.Empty(t, missing, "routes without an entry in the authorization matrix: add who may use them")

	p := startTestPortal(t, "--seed-templates", repoFile(t, "deploy/templates"))
	browsers := map[string]*user{}
	csrf := map[string]string{}
	bearers := map[string]*user{"": p.withToken(t, "", "gty_not-a-token")}
	for _, who := range people {
		browsers[who.name] = p.signIn(t, who.name)
		if who.name == "" {
			continue
		}
		csrf[who.name] = browsers[who.name].csrf()
		bearers[who.name] = p.withToken(t, who.name, apiToken(t, browsers[who.name], csrf[who.name]))
	}

	// Real jobs in each team, launched by a member: one the pages act on and
	// the browser deletes, one the API deletes.
	owners := matrixJobOwners
	pageJobs, apiJobs := map[string]matrixJob{}, map[string]matrixJob{}
	for _, team := range []string{"vision", "nlp"} {
		pageJobs[team] = launchJob(t, bearers[owners[team]], team)
		apiJobs[team] = launchJob(t, bearers[owners[team]], team)
	}
	// The job the pages act on runs a pod with a real log, so the log
	// routes answer members with its lines rather than "no pod yet".
	for _, team := range []string{"vision", "nlp"} {
		givePodLog(t, p.Env, "team-"+team, pageJobs[team].name)
	}

	// Destructive routes go last, so the jobs are still there for the others.
	slices.SortStableFunc(all, func(a, b gin.RouteInfo) int {
		return last(a) - last(b)
	})
	calls := 0
	for _, r := range all {
		exp := expectations[r.Method+" "+r.Path]
		vias := []via{browser}
		if strings.HasPrefix(r.Path, "/api/") {
			vias = append(vias, token)
		}
		for _, by := range vias {
			for _, who := range people {
				for _, team := range []string{"vision", "nlp"} {
					if !strings.Contains(r.Path, ":team") && team == "nlp" {
						continue // no team in the path: one pass, about vision
					}
					job := pageJobs[team]
					if r.Method == http.MethodDelete {
						job = apiJobs[team]
					}
					want := exp.want(who, team, r.Method, by)
					if destructive(r) && want == served && (who.name != job.owner || by != deletesVia(r)) {
						continue // only the job's owner deletes it, once
					}
					path := fillPath(r.Path, team, job.name)
					var body any
					if exp.form != nil {
						f := url.Values{}
						for k, v := range exp.form {
							f[k] = []string{strings.ReplaceAll(v[0], ":team", team)}
						}
						body = f
					} else if exp.json != "" || r.Method != http.MethodGet {
						body = exp.json
					}
					u, tok := browsers[who.name], csrf[who.name]
					if by == token {
						u, tok = bearers[who.name], ""
					}
					var status int
					var loc string
					if strings.HasSuffix(r.Path, "/logs/follow") {
						// A followed log streams until the client leaves:
						// its status is the answer.
						status, loc = u.status(r.Method, path)
					} else {
						status, loc = u.call(r.Method, path, body, tok)
					}
					calls++
					assert.Equal(t, want, classify(status, loc), "%s %s as %s by %s (team %s): status %d %s",
						r.Method, path, who.label(), by, team, status, loc)
				}
			}
		}
	}
	t.Logf("%d routes, %d people, 2 teams: %d calls", len(all), len(people), calls)

	// The owners' deletes took effect: their team sees the jobs as deleted
	// (a deleted job keeps its page, which says who deleted it).
	for _, team := range []string{"vision", "nlp"} {
		mate := map[string]string{"vision": "bob", "nlp": "dave"}[team]
		for _, job := range []matrixJob{pageJobs[team], apiJobs[team]} {
			status, body := bearers[mate].do(http.MethodGet, "/api/v1/teams/"+team+"/jobs/"+job.name, nil, "")
			assert.Equal(t, http.StatusOK, status, "%s's job %s for %s after its owner deleted it: %s", team, job.name, mate, body)
			assert.Contains(t, body, `"phase":"deleted"`, "%s's job %s is deleted for %s", team, job.name, mate)
		}
	}
}

// withToken is a client without cookies that sends name's API token.
func (p *testPortal) withToken(t *testing.T, name, token string) *user {
	t.Helper()
	u := p.signIn(t, "")
	u.name, u.bearer = name, token
	return u
}

// apiToken makes a personal API token on the user's profile page.
func apiToken(t *testing.T, u *user, csrf string) string {
	t.Helper()
	status, loc := u.call(http.MethodPost, "/profile/tokens", url.Values{"name": {"matrix"}, "expires_in_days": {"1"}}, csrf)
	require.Equal(t, http.StatusSeeOther, status, "%s makes a token (redirect to %s)", u.name, loc)
	resp, err := u.client.Get(u.base + "/profile")
	require.NoError(t, err)
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	v, _ := doc.Find(`[data-testid="new-token"]`).Attr("value")
	require.NotEmpty(t, v, "%s's profile shows the new token once", u.name)
	return v
}

// launchJob launches a small training job in team as u, through the API,
// and deletes it at the end of the test if the matrix has not.
func launchJob(t *testing.T, u *user, team string) matrixJob {
	t.Helper()
	status, body := u.do(http.MethodPost, "/api/v1/teams/"+team+"/jobs",
		`{"template":"pytorch-train","parameters":{"gpus":"1","memory":"16Gi"},"launchId":"`+launch.NewLaunchID()+`"}`, "")
	require.Equal(t, http.StatusCreated, status, "%s launches in %s: %s", u.name, team, body)
	var job struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(body), &job), body)
	t.Cleanup(func() { u.call(http.MethodDelete, "/api/v1/teams/"+team+"/jobs/"+job.Name, nil, "") })
	return matrixJob{team: team, owner: u.name, name: job.Name}
}

// givePodLog waits for the pod of job in namespace to run and makes kwok
// serve two lines as its main container's log.
func givePodLog(t *testing.T, env *stacktest.Env, namespace, job string) {
	t.Helper()
	var pod corev1.Pod
	require.Eventually(t, func() bool {
		pods, err := env.Kube.CoreV1().Pods(namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil || len(pods.Items) == 0 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false
		}
		pod = pods.Items[0]
		return true
	}, 90*time.Second, 250*time.Millisecond, "the pod of %s/%s runs", namespace, job)
	l := env.PodLog(t, namespace, pod.Name, pod.Spec.Containers[0].Name)
	l.Append(t, "epoch 1 loss 0.91", "epoch 2 loss 0.62")
}

// destructive routes delete a job; only its owner does, once.
func destructive(r gin.RouteInfo) bool {
	return r.Method == http.MethodDelete || strings.HasSuffix(r.Path, "/delete")
}

// deletesVia is how the owner deletes: the page's button, or the API with a token.
func deletesVia(r gin.RouteInfo) via {
	if strings.HasPrefix(r.Path, "/api/") {
		return token
	}
	return browser
}

// last orders routes: destructive ones, then signing out, go last.
func last(r gin.RouteInfo) int {
	switch {
	case r.Path == "/auth/logout":
		return 2
	case destructive(r):
		return 1
	}
	return 0
}

func fillPath(path, team, job string) string {
	switch {
	case path == "/pools/:pool/acceptance":
		return "/pools/h100-sxm-ib-training/acceptance"
	case strings.Contains(path, ":pool"):
		return strings.Replace(path, ":pool", "no-such-pool", 1)
	case path == "/static/*filepath":
		return "/static/css/gantry.css"
	// Team and template admin writes aim at names that do not exist.
	case path == "/api/v1/teams/:team/retire":
		return "/api/v1/teams/no-such-team/retire"
	case strings.HasPrefix(path, "/admin/teams/:name"):
		return strings.Replace(path, ":name", "no-such-team", 1)
	case strings.HasSuffix(path, "/retire") || strings.HasSuffix(path, "/publish"):
		return strings.Replace(path, ":name", "no-such-template", 1)
	case path == "/api/v1/templates/:name/diff":
		return "/api/v1/templates/pytorch-train/diff?from=1&to=1"
	case path == "/api/v1/templates/:name/versions/:version":
		return "/api/v1/templates/pytorch-train/versions/1"
	case strings.HasPrefix(path, "/api/v1/templates/:name"):
		return strings.Replace(path, ":name", "pytorch-train", 1)
	case path == "/admin/templates/:name/diff":
		return "/admin/templates/pytorch-train/diff?from=1&to=1"
	case strings.HasPrefix(path, "/admin/templates/:name"):
		return strings.Replace(path, ":name", "pytorch-train", 1)
	}
	return strings.NewReplacer(":team", team, ":name", job, ":id", "999999", ":template", "pytorch-train").Replace(path)
}
