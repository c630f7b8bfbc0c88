package web

import "net/http"

// proxyOperations document the /api/v1 twins of the job page's notebook
// sharing and endpoint keys. The proxies themselves (/teams/{team}/jobs/
// {name}/open/ and /endpoints/{team}/{name}/) are not part of this API:
// they pass the notebook's and the endpoint's own paths through.
func proxyOperations() []apiOperation {
	return []apiOperation{
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/share", Tag: "jobs",
			Summary: "Share a notebook with its team (members may open it through the portal) or stop sharing it.", Who: "the notebook's owner",
			Body: apiShareBody{}, Status: http.StatusOK, Response: apiNotebookShare{}, Errors: []int{400, 401, 403, 404}},
		{Method: http.MethodGet, Path: "/teams/:team/jobs/:name/keys", Tag: "endpoints",
			Summary: "An inference endpoint's keys, newest first, revoked and expired ones included (never their secrets).", Who: whoMember,
			Status: http.StatusOK, Response: apiEndpointKeyList{}, Errors: []int{401, 404}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/keys", Tag: "endpoints",
			Summary: "Make a key for calling an inference endpoint at /endpoints/{team}/{name}/ as \"Authorization: Bearer <secret>\"; the secret is in this answer only.", Who: whoMember,
			Body: apiEndpointKeyBody{}, Status: http.StatusCreated, Response: apiNewEndpointKey{}, Errors: []int{400, 401, 403, 404, 422}},
		{Method: http.MethodPost, Path: "/teams/:team/jobs/:name/keys/:id/revoke", Tag: "endpoints",
			Summary: "Revoke an endpoint key: calls with it are refused (401) from then on.", Who: whoMember,
			Status: http.StatusOK, Response: apiEndpointKey{}, Errors: []int{401, 403, 404}},
	}
}
