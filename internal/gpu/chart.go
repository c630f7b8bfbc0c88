package gpu

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Chart is a line chart laid out for an SVG view box of Width × Height:
// the view draws Line as a polyline and the labels as text, no script.
type Chart struct {
	Width, Height int
	// Line is the polyline's points attribute ("x,y x,y ...").
	Line string
	// Threshold is the y of a dashed guide line (the idle threshold); -1 for none.
	Threshold float64
	YLabels   []AxisLabel
	XLabels   []AxisLabel
	// Summary describes the chart in words for screen readers.
	Summary string
}

// AxisLabel is a tick label at a position along its axis.
type AxisLabel struct {
	Pos  float64
	Text string
}

// Chart geometry: a plot area inset for labels.
const (
	chartW, chartH           = 600, 160
	padLeft, padBottom, padT = 40, 20, 8
)

// PercentChart lays out a 0-100 % series with the idle threshold marked.
func PercentChart(series []Sample, threshold float64) Chart {
	c := Chart{Width: chartW, Height: chartH, Threshold: -1}
	plotW, plotH := float64(chartW-padLeft-4), float64(chartH-padBottom-padT)
	y := func(v float64) float64 { return float64(padT) + plotH*(1-max(0, min(100, v))/100) }
	for _, v := range []float64{0, 50, 100} {
		c.YLabels = append(c.YLabels, AxisLabel{Pos: y(v), Text: strconv.Itoa(int(v)) + "%"})
	}
	if threshold > 0 {
		c.Threshold = y(threshold)
	}
	if len(series) == 0 {
		c.Summary = "No measurements yet."
		return c
	}
	start, end := series[0].At, series[len(series)-1].At
	span := end.Sub(start)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(padLeft)
		}
		return float64(padLeft) + plotW*float64(t.Sub(start))/float64(span)
	}
	var b strings.Builder
	sum, lo, hi := 0.0, 100.0, 0.0
	for i, s := range series {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x(s.At), y(s.Value))
		sum += s.Value
		lo, hi = min(lo, s.Value), max(hi, s.Value)
	}
	c.Line = b.String()
	c.XLabels = []AxisLabel{{Pos: x(start), Text: start.UTC().Format("15:04")}, {Pos: x(end), Text: end.UTC().Format("15:04")}}
	c.Summary = fmt.Sprintf("GPU utilization from %s to %s UTC: average %.0f%%, lowest %.0f%%, highest %.0f%%.",
		start.UTC().Format("15:04"), end.UTC().Format("15:04"), sum/float64(len(series)), lo, hi)
	return c
}

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	// Y and H place the bar in the view box; Value is its text.
	X, Y, W, H float64
	Value      string
	// Class styles the bar (allocated, useful, idle, spend).
	Class string
}

// BarChart is a vertical bar chart for an SVG view box.
type BarChart struct {
	Width, Height int
	Bars          []Bar
	Summary       string
}

// Bars lays out labelled values as bars scaled to the largest.
func Bars(labels []string, values []float64, classes []string, format func(float64) string) BarChart {
	c := BarChart{Width: chartW, Height: chartH}
	peak := 0.0
	for _, v := range values {
		peak = max(peak, v)
	}
	n := len(values)
	if n == 0 {
		c.Summary = "Nothing to show."
		return c
	}
	slot := float64(chartW-padLeft) / float64(n)
	plotH := float64(chartH - padBottom - padT - 12)
	var parts []string
	for i, v := range values {
		h := 0.0
		if peak > 0 {
			h = plotH * v / peak
		}
		b := Bar{Label: labels[i], X: float64(padLeft) + slot*float64(i) + slot*0.15, W: slot * 0.7, H: h,
			Y: float64(chartH-padBottom) - h, Value: format(v)}
		if i < len(classes) {
			b.Class = classes[i]
		}
		c.Bars = append(c.Bars, b)
		parts = append(parts, labels[i]+" "+b.Value)
	}
	c.Summary = strings.Join(parts, ", ") + "."
	return c
}
