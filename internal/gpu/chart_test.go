package gpu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPercentChart(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := PercentChart([]Sample{{t0, 100}, {t0.Add(time.Minute), 0}}, IdleThreshold)
	assert.Equal(t, "40.0,8.0 596.0,140.0", c.Line, "100 % at the top left, 0 % at the bottom right")
	assert.InDelta(t, 133.4, c.Threshold, 0.01, "the 5 % idle threshold")
	assert.Equal(t, "GPU utilization from 12:00 to 12:01 UTC: average 50%, lowest 0%, highest 100%.", c.Summary)

	empty := PercentChart(nil, IdleThreshold)
	assert.Empty(t, empty.Line)
	assert.Equal(t, "No measurements yet.", empty.Summary)
}

func TestBars(t *testing.T) {
	c := Bars([]string{"allocated", "useful"}, []float64{10, 5}, []string{"a", "b"}, func(v float64) string { return "x" })
	assert.Len(t, c.Bars, 2)
	assert.InDelta(t, 2*c.Bars[1].H, c.Bars[0].H, 1e-9, "half the value, half the height")
	assert.Equal(t, "a", c.Bars[0].Class)
}
