package gpu

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStackedBarsScaleEveryPartToTheTallestBar(t *testing.T) {
	gpuHours := func(v float64) string { return fmt.Sprintf("%.1f GPU-h", v) }
	c := StackedBars([]string{"Nov 16", "Nov 23"}, []string{"useful", "idle", "failed"}, []string{"u", "i", "f"},
		[][]float64{{6, 2, 2}, {3, 1, 0}}, gpuHours)
	plotH := float64(chartH - padBottom - padT - 12)
	bottom := float64(chartH - padBottom)
	if !assert.Len(t, c.Bars, 2) {
		return
	}
	tall, short := c.Bars[0], c.Bars[1]
	assert.Equal(t, "10.0 GPU-h", tall.Total)
	assert.Equal(t, "4.0 GPU-h", short.Total)
	// The tallest bar fills the plot: useful 60 %, idle 20 %, failed 20 % of it, bottom up.
	assert.InDelta(t, plotH*0.6, tall.Segments[0].H, 1e-9)
	assert.InDelta(t, bottom-plotH*0.6, tall.Segments[0].Y, 1e-9)
	assert.InDelta(t, plotH*0.2, tall.Segments[1].H, 1e-9)
	assert.InDelta(t, bottom-plotH*0.8, tall.Segments[1].Y, 1e-9)
	assert.InDelta(t, bottom-plotH, tall.Segments[2].Y, 1e-9)
	// The other bar is 4/10 of it.
	assert.InDelta(t, plotH*0.3, short.Segments[0].H, 1e-9)
	assert.InDelta(t, plotH*0.1, short.Segments[1].H, 1e-9)
	assert.Zero(t, short.Segments[2].H)
	assert.Equal(t, []string{"6.0 GPU-h", "2.0 GPU-h", "2.0 GPU-h"}, []string{tall.Segments[0].Value, tall.Segments[1].Value, tall.Segments[2].Value})
	assert.Equal(t, "Nov 16: useful 6.0 GPU-h, idle 2.0 GPU-h, failed 2.0 GPU-h; Nov 23: useful 3.0 GPU-h, idle 1.0 GPU-h, failed 0.0 GPU-h.", c.Summary)
}
