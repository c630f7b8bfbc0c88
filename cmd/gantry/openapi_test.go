package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/web"
)

// openAPIDoc is the part of the OpenAPI document a script relies on.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Responses   map[string]struct {
			Ref     string `json:"$ref"`
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	} `json:"paths"`
}

// openAPIOf fetches /api/v1/openapi.json from h, without signing in.
func openAPIOf(t *testing.T, h http.Handler) openAPIDoc {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	return doc
}

// TestOpenAPIMatchesRouter: every /api/v1 route is in the document, and
// every documented operation is a route.
func TestOpenAPIMatchesRouter(t *testing.T) {
	// Job logs too, which the authorization matrix leaves out for now.
	engine := everything(t, func(d *web.Deps) { d.Logs = &kube.PodLogs{} })
	doc := openAPIOf(t, engine)
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "an OpenAPI 3 document: %q", doc.OpenAPI)

	var routed, documented []string
	for _, r := range engine.Routes() {
		if r.Method == http.MethodHead || !strings.HasPrefix(r.Path, "/api/v1/") {
			continue
		}
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if name, ok := strings.CutPrefix(p, ":"); ok {
				parts[i] = "{" + name + "}"
			}
		}
		routed = append(routed, r.Method+" "+strings.Join(parts, "/"))
	}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			documented = append(documented, key)
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share the operationId %q", key, other, op.OperationID)
			}
			ids[op.OperationID] = key
			var ok bool
			for status, resp := range op.Responses {
				switch {
				case strings.HasPrefix(status, "2"):
					ok = true
				default:
					assert.Equal(t, "#/components/responses/Error", resp.Ref, "%s answers %s in the one error shape", key, status)
				}
			}
			assert.True(t, ok, "%s documents its success answer", key)
		}
	}
	slices.Sort(routed)
	slices.Sort(documented)
	assert.Equal(t, routed, documented, "the routes under /api/v1 and the operations in /api/v1/openapi.json")
}

// openAPISpec is the served document, read generically to check answers.
type openAPISpec struct {
	doc map[string]any
}

// fetchSpec reads /api/v1/openapi.json from a running portal, unsigned.
func fetchSpec(t *testing.T, base string) *openAPISpec {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the document is public")
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return &openAPISpec{doc: doc}
}

// conforms checks that the answer's status is documented for the
// operation and that its body validates against the documented schema.
func (s *openAPISpec) conforms(t *testing.T, method, rawPath string, status int, body string) {
	t.Helper()
	path, _, _ := strings.Cut(rawPath, "?")
	tpl, ok := s.template(path)
	if !assert.True(t, ok, "%s is documented", path) {
		return
	}
	op, _ := s.at("paths", tpl, strings.ToLower(method)).(map[string]any)
	if !assert.NotNil(t, op, "%s %s is documented", method, tpl) {
		return
	}
	resp, _ := s.resolve(s.at1(op, "responses", strconv.Itoa(status))).(map[string]any)
	if !assert.NotNil(t, resp, "%s %s documents the status %d it answered (%s)", method, tpl, status, body) {
		return
	}
	schema := s.at1(resp, "content", "application/json", "schema")
	if schema == nil {
		assert.Empty(t, body, "%s %s %d has no documented body", method, tpl, status)
		return
	}
	var v any
	require.NoError(t, json.Unmarshal([]byte(body), &v), "%s %s answers JSON", method, path)
	for _, problem := range s.validate(schema, v, "body") {
		t.Errorf("%s %s %d does not match the document: %s", method, path, status, problem)
	}
}

// template is the documented path matching path, preferring literal segments.
func (s *openAPISpec) template(path string) (string, bool) {
	paths, _ := s.doc["paths"].(map[string]any)
	want := strings.Split(path, "/")
	best, bestScore := "", -1
	for tpl := range paths {
		got := strings.Split(tpl, "/")
		if len(got) != len(want) {
			continue
		}
		score := 0
		for i := range got {
			switch {
			case got[i] == want[i]:
				score++
			case strings.HasPrefix(got[i], "{"):
			default:
				score = -1
			}
			if score < 0 {
				break
			}
		}
		if score > bestScore {
			best, bestScore = tpl, score
		}
	}
	return best, bestScore >= 0
}

func (s *openAPISpec) at(keys ...string) any { return s.at1(s.doc, keys...) }

func (s *openAPISpec) at1(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := s.resolve(v).(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// resolve follows a local $ref.
func (s *openAPISpec) resolve(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return v
	}
	return s.resolve(s.at(strings.Split(strings.TrimPrefix(ref, "#/"), "/")...))
}

// validate lists where v departs from schema: wrong types, missing
// required properties, properties the document does not name.
func (s *openAPISpec) validate(schema, v any, where string) []string {
	sc, _ := s.resolve(schema).(map[string]any)
	if v == nil {
		if nullable, _ := sc["nullable"].(bool); nullable || sc["type"] == nil {
			return nil
		}
		return []string{where + " is null"}
	}
	var out []string
	switch sc["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %T, not an object", where, v)}
		}
		props, _ := sc["properties"].(map[string]any)
		req, _ := sc["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				out = append(out, fmt.Sprintf("%s lacks required %q", where, r))
			}
		}
		for k, pv := range m {
			switch {
			case props[k] != nil:
				out = append(out, s.validate(props[k], pv, where+"."+k)...)
			case sc["additionalProperties"] != nil:
				out = append(out, s.validate(sc["additionalProperties"], pv, where+"."+k)...)
			case props != nil:
				out = append(out, fmt.Sprintf("%s has %q, which the document does not name", where, k))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %T, not an array", where, v)}
		}
		for i, item := range a {
			out = append(out, s.validate(sc["items"], item, fmt.Sprintf("%s[%d]", where, i))...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			out = append(out, fmt.Sprintf("%s is %T, not a string", where, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			out = append(out, fmt.Sprintf("%s is %v, not an integer", where, v))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			out = append(out, fmt.Sprintf("%s is %T, not a number", where, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			out = append(out, fmt.Sprintf("%s is %T, not a boolean", where, v))
		}
	}
	return out
}
