package views

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJobIdleCard(t *testing.T) {
	base := JobIdleProps{Policy: "Idle when every GPU sample stays under 5% utilization for 60 minutes; then warned, then stopped with its workspace kept.",
		ExemptURL: "/teams/vision/jobs/nb/idle/exempt", UnexemptURL: "/teams/vision/jobs/nb/idle/unexempt"}
	warned := base
	warned.Warning = "Its GPUs have been under 5% utilization since 11:00 UTC. It will be stopped at 12:15 UTC; its workspace is kept."
	warned.KeepURL, warned.KeepLabel = "/teams/vision/jobs/nb/idle/keep", "Keep it running for 2 hours"
	lead := base
	lead.CanExempt = true
	exempt := lead
	exempt.Exempt, exempt.Hold = true, "Exempt from idle reclaim by bob: benchmark"

	doc := render(t, JobIdle(Nav{User: bob}, &warned))
	assert.Equal(t, warned.Warning, text(byTestID(doc, "idle-warning").Find("p")))
	assert.Equal(t, "Keep it running for 2 hours", text(byTestID(doc, "idle-keep")))
	assert.Zero(t, byTestID(doc, "idle-exempt-form").Length(), "researchers get no exemption form")

	doc = render(t, JobIdle(Nav{User: bob}, &lead))
	assert.Zero(t, byTestID(doc, "idle-warning").Length(), "no banner without a warning")
	assert.Equal(t, 1, byTestID(doc, "idle-exempt-form").Length(), "a lead can exempt")

	doc = render(t, JobIdle(Nav{User: bob}, &exempt))
	assert.Equal(t, "Exempt from idle reclaim by bob: benchmark", text(byTestID(doc, "idle-hold")))
	assert.Equal(t, 1, byTestID(doc, "idle-unexempt").Length(), "and remove the exemption")

	doc = render(t, JobIdle(Nav{User: bob}, nil))
	assert.Zero(t, byTestID(doc, "idle-policy").Length(), "nothing without the reclaim")
}
