package gpu

import (
	"fmt"
	"strings"
)

// Segment is one part of a stacked bar.
type Segment struct {
	Series string
	// Y and H place the segment in the view box; Amount is the figure it
	// stands for and Value that figure in words.
	Y, H   float64
	Amount float64
	Value  string
	Class  string
}

// StackedBar is one bar of segments, bottom first.
type StackedBar struct {
	Label    string
	X, W     float64
	Segments []Segment
	// Total is the sum of the segments in words, written above the bar.
	Total  string
	TotalY float64
}

// StackedBarChart is a stacked bar chart for an SVG view box.
type StackedBarChart struct {
	Width, Height int
	Bars          []StackedBar
	// Summary describes every bar in words (aria-label and caption).
	Summary string
}

// StackedBars lays out bars of stacked values (values[bar][series]),
// scaled so the tallest total fills the plot; format writes a figure.
func StackedBars(labels, series, classes []string, values [][]float64, format func(float64) string) StackedBarChart {
	c := StackedBarChart{Width: chartW, Height: chartH}
	if len(values) == 0 {
		c.Summary = "Nothing to show."
		return c
	}
	peak := 0.0
	for _, vs := range values {
		total := 0.0
		for _, v := range vs {
			total += max(0, v)
		}
		peak = max(peak, total)
	}
	slot := float64(chartW-padLeft) / float64(len(values))
	plotH := float64(chartH - padBottom - padT - 12)
	var words []string
	for i, vs := range values {
		b := StackedBar{Label: labels[i], X: float64(padLeft) + slot*float64(i) + slot*0.15, W: slot * 0.7}
		base := float64(chartH - padBottom)
		total := 0.0
		var parts []string
		for j, v := range vs {
			v = max(0, v)
			h := 0.0
			if peak > 0 {
				h = plotH * v / peak
			}
			base -= h
			s := Segment{Series: series[j], Y: base, H: h, Amount: v, Value: format(v)}
			if j < len(classes) {
				s.Class = classes[j]
			}
			b.Segments = append(b.Segments, s)
			total += v
			parts = append(parts, series[j]+" "+s.Value)
		}
		b.Total, b.TotalY = format(total), base-4
		c.Bars = append(c.Bars, b)
		words = append(words, fmt.Sprintf("%s: %s", labels[i], strings.Join(parts, ", ")))
	}
	c.Summary = strings.Join(words, "; ") + "."
	return c
}
