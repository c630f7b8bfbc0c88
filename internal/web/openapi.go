package web

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
)

// apiOperation documents one /api/v1 route. The OpenAPI document is built
// from these, and a test checks them against the router both ways. Body
// and Response are values of the Go types the handler reads and writes;
// their schemas are derived from the types, so the document follows the code.
type apiOperation struct {
	Method, Path string // as the router has them: /teams/:team/jobs
	Tag          string
	Summary      string
	// Who may call it, in words (the roles as on the pages).
	Who   string
	Query []apiQueryParam
	Body  any
	// Status and Response are the success answer; Response nil means no body
	// (or, with Object, a JSON object the schema does not detail).
	Status   int
	Response any
	Object   bool
	// Errors are the documented error statuses, each in the one error shape.
	Errors []int
}

// apiQueryParam is an optional query parameter.
type apiQueryParam struct{ Name, Type, Description string }

// Who may call a route, in the roles of the pages.
const (
	whoAnyone   = "anyone"
	whoSignedIn = "any signed-in user"
	whoMember   = "members of the team in the path, and admins"
	whoDecider  = "team leads (for their teams) and admins"
	whoTeamLead = "leads of the team in the path, and admins"
	whoAdmin    = "admins"
)

// staleNote ends the summary of the answers read from the portal's caches.
const staleNote = " While the Kubernetes API server does not answer, the answer is the portal's last view of the cluster and its stale object says since when."

// unreachable is the status of an action refused while the Kubernetes API
// server does not answer (code cluster_unreachable).
const unreachable = http.StatusServiceUnavailable

// apiOperations is every /api/v1 route, documented.
func apiOperations() []apiOperation {
	ops := []apiOperation{
		{Method: http.MethodGet, Path: "/openapi.json", Tag: "meta", Summary: "This document.", Who: whoAnyone, Status: http.StatusOK, Object: true},
		{Method: http.MethodGet, Path: "/me", Tag: "meta", Summary: "Who the caller is, with teams and role.", Who: whoSignedIn,
			Status: http.StatusOK, Response: meResponse{}, Errors: []int{401}},

		{Method: http.MethodGet, Path: "/tokens", Tag: "tokens", Summary: "The caller's personal API tokens, without their secrets.", Who: whoSignedIn,
			Status: http.StatusOK, Response: apiTokenList{}, Errors: []int{401}},
		{Method: http.MethodPost, Path: "/tokens", Tag: "tokens", Summary: "Make a personal API token; the secret is in this answer only. A token cannot make another token.", Who: whoSignedIn + " by the browser session",
			Body: apiTokenBody{}, Status: http.StatusCreated, Response: apiNewToken{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodPost, Path: "/tokens/:id/revoke", Tag: "tokens", Summary: "Revoke one of the caller's tokens; scripts using it are refused from then on.", Who: "the token's owner",
			Status: http.StatusOK, Response: apiToken{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/admin/tokens", Tag: "tokens", Summary: "Everyone's API tokens, newest first.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTokenList{}, Errors: []int{401, 403}},
		{Method: http.MethodPost, Path: "/admin/tokens/:id/revoke", Tag: "tokens", Summary: "Revoke anyone's API token.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiToken{}, Errors: []int{401, 403, 404}},

		{Method: http.MethodGet, Path: "/templates", Tag: "jobs", Summary: "Templates the caller's teams may launch.", Who: whoSignedIn,
			Status: http.StatusOK, Object: true, Errors: []int{401}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs", Tag: "jobs", Summary: "One page of the team's jobs, newest first, with their phase." + staleNote, Who: whoMember,
			Query: []apiQueryParam{{"kind", "string", "training, notebook or inference"}, {"mine", "string", "1: only the caller's jobs"},
				{"page", "integer", "1-based page (default 1)"}, {"perPage", "integer", "jobs per page, at most 500 (default 50)"}},
			Status: http.StatusOK, Response: apiJobList{}, Errors: []int{401, 404, 422, 503}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs", Tag: "jobs", Summary: "Launch a job from a template; launchId makes retries safe.", Who: whoMember,
			Body: apiLaunchRequest{}, Status: http.StatusCreated, Response: apiJob{}, Errors: []int{400, 401, 403, 409, 422, unreachable}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs/:name", Tag: "jobs", Summary: "A job's record and status." + staleNote, Who: whoMember,
			Status: http.StatusOK, Response: apiJob{}, Errors: []int{401, 404}},
		{Method: http.MethodDelete, Path: "/teams/:team/jobs/:name", Tag: "jobs", Summary: "Delete a job, as the caller.", Who: whoMember,
			Status: http.StatusNoContent, Errors: []int{401, 403, 404, unreachable}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/stop", Tag: "jobs", Summary: "Stop a notebook or endpoint, as the caller; its workspace is kept.", Who: whoMember,
			Status: http.StatusAccepted, Response: apiJobAccepted{}, Errors: []int{400, 401, 403, 404, 409, unreachable}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/resume", Tag: "jobs", Summary: "Resume a stopped notebook or endpoint; it queues for a GPU again.", Who: whoMember,
			Status: http.StatusAccepted, Response: apiJobAccepted{}, Errors: []int{400, 401, 403, 404, 409, unreachable}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/scale", Tag: "jobs", Summary: "Set an inference endpoint's replicas within its range.", Who: whoMember,
			Body: apiScaleBody{}, Status: http.StatusAccepted, Response: apiJobAccepted{}, Errors: []int{400, 401, 403, 404, 409, 422, unreachable}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs/:name/logs", Tag: "jobs",
			Summary: "A container's log, read as the caller: plain text by default; with Accept: application/json one object with the lines; " +
				"following, with Accept: application/x-ndjson, one {\"line\"} object per line as it is written.", Who: whoMember,
			Query: []apiQueryParam{{"pod", "string", "pod name (default: the job's first)"}, {"container", "string", "container name"},
				{"previous", "boolean", "the previous container's log"}, {"tailLines", "integer", "last lines only"},
				{"limitBytes", "integer", "at most this many bytes"}, {"follow", "boolean", "stream new lines as they are written"}},
			Status: http.StatusOK, Object: true, Errors: []int{401, 404, 422}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs/:name/idle", Tag: "idle", Summary: "A job's idle reclaim: its policy, a pending stop warning, a training flag, what the reclaim did (with the GPU-hours and money freed) and what holds it.", Who: whoMember,
			Status: http.StatusOK, Response: apiJobIdleBody{}, Errors: []int{401, 404}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/idle/keep", Tag: "idle", Summary: "Keep an idle notebook running for its policy's extension; a pending warning is withdrawn.", Who: whoMember,
			Status: http.StatusOK, Response: apiJobIdleBody{}, Errors: []int{401, 404, 409}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/idle/exempt", Tag: "idle", Summary: "Exempt a job from idle reclaim, with the reason its page and the audit log show.", Who: whoDecider,
			Body: apiIdleExemptBody{}, Status: http.StatusOK, Response: apiJobIdleBody{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/idle/unexempt", Tag: "idle", Summary: "Remove a job's exemption or extension.", Who: whoDecider,
			Status: http.StatusOK, Response: apiJobIdleBody{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/admin/idle-policies", Tag: "idle", Summary: "The idle reclaim policy of every kind (the default for every team) and every team's own, with the configured bounds.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiIdlePolicyList{}, Errors: []int{401, 403}},
		{Method: http.MethodPut, Path: "/admin/idle-policies", Tag: "idle", Summary: "Set the idle reclaim policy of a kind, for one team or (team empty) every team, within the configured bounds.", Who: whoAdmin,
			Body: apiIdlePolicyBody{}, Status: http.StatusOK, Response: apiIdlePolicy{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs/:name/status", Tag: "status", Summary: "A job's queue, GPU and cost status." + staleNote, Who: whoMember,
			Status: http.StatusOK, Response: apiJobStatusBody{}, Errors: []int{401, 404}},
		{Method: http.MethodGet, Path: "/teams/:team/status", Tag: "status", Summary: "The team page: queue, quota, month's cost, running jobs, waits." + staleNote, Who: whoMember,
			Status: http.StatusOK, Object: true, Errors: []int{401, 404}},
		{Method: http.MethodGet, Path: "/teams/:team/ledger", Tag: "status", Summary: "The team's finished-run cost ledger.", Who: whoMember,
			Query:  []apiQueryParam{{"from", "string", "first day, YYYY-MM-DD (default: this month)"}, {"to", "string", "last day, YYYY-MM-DD"}},
			Status: http.StatusOK, Object: true, Errors: []int{401, 404}},
		{Method: http.MethodGet, Path: "/teams/:team/webhook", Tag: "status", Summary: "The team's chat webhook (job endings posted as JSON) and its latest deliveries.", Who: whoTeamLead,
			Status: http.StatusOK, Response: apiWebhook{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodPut, Path: "/teams/:team/webhook", Tag: "status", Summary: "Set the team's chat webhook URL (https; an empty url removes it).", Who: whoTeamLead,
			Body: apiWebhookRequest{}, Status: http.StatusOK, Response: apiWebhook{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodGet, Path: "/cluster/status", Tag: "status", Summary: "The cluster page: pools, queues and cost." + staleNote, Who: whoAdmin,
			Status: http.StatusOK, Response: clusterStatus{}, Errors: []int{401, 403}},

		{Method: http.MethodGet, Path: "/quota-requests", Tag: "quota", Summary: "The caller's quota requests, newest first, and their teams' active grants.", Who: whoSignedIn,
			Status: http.StatusOK, Response: apiQuotaRequestList{}, Errors: []int{401}},
		{Method: http.MethodPost, Path: "/teams/:team/quota-requests", Tag: "quota", Summary: "Ask for more (or fewer) GPUs of a pool for the team; a lead decides.", Who: "members of the team in the path",
			Body: apiQuotaRequestBody{}, Status: http.StatusCreated, Response: apiQuotaRequest{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodPost, Path: "/quota-requests/:id/withdraw", Tag: "quota", Summary: "Withdraw the caller's own open request.", Who: "the requester",
			Status: http.StatusOK, Response: apiQuotaRequest{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/approvals", Tag: "quota", Summary: "Open requests the caller decides, with the team's quota, usage and ceiling.", Who: whoSignedIn + " (empty unless a lead or admin)",
			Status: http.StatusOK, Response: apiApprovalList{}, Errors: []int{401}},
		{Method: http.MethodPost, Path: "/approvals/:id/decide", Tag: "quota", Summary: "Approve or reject a request with a comment; an approval changes the team's ClusterQueue.", Who: whoDecider,
			Body: apiDecisionBody{}, Status: http.StatusOK, Response: apiQuotaRequest{}, Errors: []int{400, 401, 403, 404, 409, 422}},
		{Method: http.MethodGet, Path: "/notifications", Tag: "notifications", Summary: "The caller's messages, newest first.", Who: whoSignedIn,
			Status: http.StatusOK, Response: apiNotificationList{}, Errors: []int{401}},
		{Method: http.MethodPost, Path: "/notifications/read", Tag: "notifications", Summary: "Mark all the caller's messages read.", Who: whoSignedIn,
			Status: http.StatusNoContent, Errors: []int{401, 403}},

		{Method: http.MethodGet, Path: "/teams", Tag: "teams", Summary: "Every team, retired ones too.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTeamList{}, Errors: []int{401, 403}},
		{Method: http.MethodPost, Path: "/teams", Tag: "teams", Summary: "Create a team: its namespace, queues and RoleBindings, with no GPUs until a request is approved.", Who: whoAdmin,
			Body: apiTeamBody{}, Status: http.StatusCreated, Response: apiTeam{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodGet, Path: "/teams/:team", Tag: "teams", Summary: "A team with its ceilings.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTeam{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodPut, Path: "/teams/:team", Tag: "teams", Summary: "Replace a team's display name, cost center, groups and ceilings; its quota is kept.", Who: whoAdmin,
			Body: apiTeamBody{}, Status: http.StatusOK, Response: apiTeam{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/teams/:team/retire", Tag: "teams", Summary: "Retire a team: running work finishes, nothing new is admitted.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTeam{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/audit", Tag: "audit", Summary: "The audit log, newest first, a page at a time; next is the following page.", Who: whoAdmin,
			Query: []apiQueryParam{{"actor", "string", "username"}, {"action", "string", "for example quota.approve"}, {"team", "string", "team name"},
				{"from", "string", "first day, YYYY-MM-DD"}, {"to", "string", "last day, YYYY-MM-DD"},
				{"before", "integer", "entries older than this id (from next)"}, {"limit", "integer", "entries per page, at most 500 (default 50)"}},
			Status: http.StatusOK, Response: apiAuditPage{}, Errors: []int{401, 403, 422}},

		{Method: http.MethodGet, Path: "/admin/templates", Tag: "templates", Summary: "Every template's newest version, drafts included, with the version researchers launch.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiAdminTemplateList{}, Errors: []int{401, 403}},
		{Method: http.MethodPost, Path: "/templates/preview", Tag: "templates", Summary: "Render a template's YAML for sample parameters and list its policy violations; nothing is saved.", Who: whoAdmin,
			Body: apiTemplateImportBody{}, Status: http.StatusOK, Response: apiTemplatePreview{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodPost, Path: "/templates/:name/duplicate", Tag: "templates", Summary: "Copy a version as the first draft of a new template.", Who: whoAdmin,
			Body: apiTemplateDuplicateBody{}, Status: http.StatusCreated, Response: apiTemplateVersion{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/templates/import", Tag: "templates", Summary: "Save every template of the YAML as a new draft version.", Who: whoAdmin,
			Body: apiTemplateImportBody{}, Status: http.StatusCreated, Response: apiTemplateVersionList{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodGet, Path: "/templates/:name/versions", Tag: "templates", Summary: "Every version of a template: draft, published or retired.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTemplateVersionList{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/templates/:name/versions/:version", Tag: "templates", Summary: "One version with its YAML; \"latest\" is the newest.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiTemplateSource{}, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/templates/:name/diff", Tag: "templates", Summary: "A unified diff between two versions' YAML.", Who: whoAdmin,
			Query:  []apiQueryParam{{"from", "integer", "older version"}, {"to", "integer", "newer version"}},
			Status: http.StatusOK, Response: apiTemplateDiff{}, Errors: []int{401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/templates/:name/publish", Tag: "templates", Summary: "Publish a draft version, unless policy finds violations (listed in problems).", Who: whoAdmin,
			Body: apiTemplatePublishBody{}, Status: http.StatusOK, Response: apiTemplateVersion{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/templates/:name/retire", Tag: "templates", Summary: "Stop offering a template; its running jobs are unaffected.", Who: whoAdmin,
			Status: http.StatusNoContent, Errors: []int{401, 403, 404}},
		{Method: http.MethodGet, Path: "/prices", Tag: "prices", Summary: "Every GPU-hour price, past, current and future.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiPriceList{}, Errors: []int{401, 403}},
		{Method: http.MethodPost, Path: "/prices", Tag: "prices", Summary: "Set a pool's price per GPU-hour from a date on (today or later).", Who: whoAdmin,
			Body: apiPriceBody{}, Status: http.StatusCreated, Response: apiPrice{}, Errors: []int{400, 401, 403, 422}},
		{Method: http.MethodGet, Path: "/allowlist", Tag: "allowlist", Summary: "The registries images may come from.", Who: whoAdmin,
			Status: http.StatusOK, Response: apiAllowlist{}, Errors: []int{401, 403}},
		{Method: http.MethodPut, Path: "/allowlist", Tag: "allowlist", Summary: "Replace the image registry allowlist; publishing and launches use it from then on.", Who: whoAdmin,
			Body: apiAllowlistBody{}, Status: http.StatusOK, Response: apiAllowlist{}, Errors: []int{400, 401, 403, 422}},
	}
	return append(append(append(ops, proxyOperations()...), acceptanceOperations()...), accountingOperations()...)
}

// openAPIPath writes a router path as OpenAPI does: /teams/{team}/jobs.
func openAPIPath(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return "/api/v1" + strings.Join(parts, "/")
}

// pathParams are the names of a router path's parameters, in order.
func pathParams(path string) []string {
	var out []string
	for p := range strings.SplitSeq(path, "/") {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			out = append(out, name)
		}
	}
	return out
}

// openAPIDocument is the OpenAPI 3 document of the operations.
func openAPIDocument(ops []apiOperation, serverURL string) map[string]any {
	paths := map[string]map[string]any{}
	for _, op := range ops {
		p := openAPIPath(op.Path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		o := map[string]any{
			"summary":     op.Summary,
			"description": "Who may call it: " + op.Who + ".",
			"tags":        []string{op.Tag},
			"operationId": operationID(op),
		}
		var params []map[string]any
		for _, name := range pathParams(op.Path) {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range op.Query {
			params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": map[string]any{"type": q.Type}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.Body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(reflect.TypeOf(op.Body))}}}
		}
		responses := map[string]any{}
		ok := map[string]any{"description": http.StatusText(op.Status)}
		switch {
		case op.Response != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": schemaOf(reflect.TypeOf(op.Response))}}
		case op.Object:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}
		}
		responses[strconv.Itoa(op.Status)] = ok
		for _, s := range op.Errors {
			responses[strconv.Itoa(s)] = map[string]any{"$ref": "#/components/responses/Error"}
		}
		o["responses"] = responses
		o["security"] = []map[string][]string{{"bearer": {}}, {"session": {}}}
		if op.Who == whoAnyone {
			o["security"] = []map[string][]string{}
		}
		paths[p][strings.ToLower(op.Method)] = o
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":   "Gantry API",
			"version": "v1",
			"description": "Everything a person clicks in the portal, a script can call. Authenticate with a personal API token " +
				"(Authorization: Bearer gty_…; a read-only token may only GET) or the browser session. Every error has the same " +
				"JSON shape with a stable machine-readable code beside the sentence. While the Kubernetes API server does not answer, " +
				"lists and statuses still answer from the portal's cache with a stale object (lastAnswer, seconds, message), and " +
				"actions that change the cluster are refused with 503 and the code cluster_unreachable.",
		},
		"servers": []map[string]string{{"url": serverURL}},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"bearer":  map[string]any{"type": "http", "scheme": "bearer", "description": "A personal API token made on the profile page."},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": "session", "description": "The browser session; writes need the CSRF header."},
			},
			"schemas": map[string]any{"Error": schemaOf(reflect.TypeFor[apiErrorBody]())},
			"responses": map[string]any{
				"Error": map[string]any{"description": "An error: code is stable, message is a sentence for a person.",
					"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}},
			},
		},
	}
}

// operationID is a stable name for an operation: getTeamsTeamJobs.
func operationID(op apiOperation) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.Method))
	for _, part := range strings.FieldsFunc(op.Path, func(r rune) bool { return r == '/' || r == '-' || r == '.' || r == ':' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// schemaOf is the JSON schema of a Go type as encoding/json writes it:
// fields by their json names, omitempty fields optional, pointers nullable.
func schemaOf(t reflect.Type) map[string]any {
	switch t {
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	case reflect.TypeFor[money.USD]():
		// Dollars as an exact decimal number: 0.533333.
		return map[string]any{"type": "number"}
	case reflect.TypeFor[json.RawMessage]():
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaOf(t.Elem())
		s["nullable"] = true
		return s
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem()), "nullable": t.Kind() == reflect.Slice}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem()), "nullable": true}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		addStructFields(t, props, &required)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			slices.Sort(required)
			s["required"] = required
		}
		return s
	default:
		return map[string]any{}
	}
}

func addStructFields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		// encoding/json promotes the fields of an embedded struct, exported or not.
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addStructFields(f.Type, props, required)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type)
		if !strings.Contains(opts, "omitempty") {
			*required = append(*required, name)
		}
	}
}
