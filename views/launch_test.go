package views

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
)

func TestLaunchFormShowsErrorsNextToTypedValues(t *testing.T) {
	doc := render(t, LaunchFormPage(Nav{User: &NavUser{Username: "alice"}}, LaunchFormProps{
		Template: TemplateCard{Name: "pytorch-train", Title: "PyTorch training", Version: 2},
		Action:   "/launch/pytorch-train", LaunchID: "abcdefgh12", Team: "vision",
		Teams: []Option{{Value: "vision", Label: "Computer Vision (vision)"}},
		Fields: []FormField{
			{Name: "gpus", Label: "GPUs per pod", Type: "number", Value: "16", Error: "This template allows the number of GPUs from 1 to 8; you asked for 16."},
			{Name: "gpuType", Label: "GPU type", Type: "select", Value: "l40s", Options: []Option{{"h100", "H100"}, {"l40s", "L40S"}}},
		},
	}))
	assertCSPSafe(t, doc)
	assert.Equal(t, "16", byTestID(doc, "field-gpus").AttrOr("value", ""))
	assert.Equal(t, "This template allows the number of GPUs from 1 to 8; you asked for 16.", text(byTestID(doc, "error-gpus")))
	assert.Equal(t, "l40s", byTestID(doc, "field-gpuType").Find("option[selected]").AttrOr("value", ""))
	assert.Equal(t, "abcdefgh12", byTestID(doc, "launch-id").AttrOr("value", ""))
	assert.Equal(t, "vision", byTestID(doc, "field-team").Find("option[selected]").AttrOr("value", ""))
}

func TestJobPageShowsPhaseAccessAndActions(t *testing.T) {
	doc := render(t, JobPage(Nav{User: &NavUser{Username: "alice"}}, JobProps{
		Team: "vision", Name: "jupyter-pytorch-abc", Kind: "notebook", Version: 1,
		Status:      JobStatusPanel{Phase: "stopped", Message: "Stopped.", URL: "/teams/vision/jobs/jupyter-pytorch-abc/status"},
		ServiceDNS:  "jupyter-pytorch-abc.team-vision.svc.cluster.local:8888",
		PortForward: "kubectl -n team-vision port-forward service/jupyter-pytorch-abc 8888:8888",
		Actions:     []JobAction{{Label: "Resume", URL: "/x/resume", TestID: "resume"}},
		ManifestURL: "/teams/vision/jobs/jupyter-pytorch-abc/manifest",
	}))
	assertCSPSafe(t, doc)
	assert.Equal(t, "stopped", text(byTestID(doc, "job-phase")))
	assert.Equal(t, "/teams/vision/jobs/jupyter-pytorch-abc/status", byTestID(doc, "job-status").AttrOr("data-refresh-url", ""))
	assert.Equal(t, "kubectl -n team-vision port-forward service/jupyter-pytorch-abc 8888:8888", text(byTestID(doc, "port-forward")))
	assert.Equal(t, 1, byTestID(doc, "resume").Length())
	assert.Equal(t, 1, byTestID(doc, "refresh").Length(), "a plain refresh link works without script")
	var scripts []string
	doc.Find("script").Each(func(_ int, s *goquery.Selection) { scripts = append(scripts, s.AttrOr("src", "")) })
	assert.Equal(t, []string{"/static/js/status-refresh.js"}, scripts, "one generic refresh script")
}

// With no template to launch, the page says who can change that.
func TestLaunchPageWithoutTemplatesSaysWhoPublishesThem(t *testing.T) {
	doc := render(t, TemplatesPage(Nav{User: alice}, TemplatesProps{}))
	assert.Contains(t, text(byTestID(doc, "no-templates-next")), "ask them for one your team can launch")
	doc = render(t, TemplatesPage(Nav{User: erin}, TemplatesProps{}))
	assert.Equal(t, "/admin/templates", byTestID(doc, "no-templates-next").Find("a").AttrOr("href", ""))
}

// A running notebook's Open comes first on its page, above the idle policy
// and the status panel with its events (it used to sit below both).
func TestNotebookOpenComesBeforeTheStatusPanel(t *testing.T) {
	doc := render(t, JobPage(Nav{User: alice}, JobProps{
		Team: "vision", Name: "jupyter-pytorch-abc", Kind: "notebook", Version: 1,
		Status: JobStatusPanel{Phase: "running", URL: "/teams/vision/jobs/jupyter-pytorch-abc/status"},
		Open:   &NotebookOpenPanel{MayOpen: true, OpenURL: "/teams/vision/jobs/jupyter-pytorch-abc/open/"},
	}))
	var order []string
	doc.Find(`[data-testid="notebook-open"], [data-testid="job-status"]`).Each(func(_ int, s *goquery.Selection) {
		order = append(order, s.AttrOr("data-testid", ""))
	})
	assert.Equal(t, []string{"notebook-open", "job-status"}, order)
}
