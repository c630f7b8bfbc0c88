package views

// LineChart is a line chart laid out for an SVG view box (see internal/gpu).
type LineChart struct {
	Width, Height int
	// Line is the polyline's points attribute; empty when there is no data.
	Line string
	// Threshold is the y of a dashed guide line; negative for none.
	Threshold float64
	YLabels   []AxisLabel
	XLabels   []AxisLabel
	// Summary describes the chart in words (aria-label and caption).
	Summary string
	TestID  string
}

// AxisLabel is a tick label at a position along its axis.
type AxisLabel struct {
	Pos  float64
	Text string
}

// BarChart is a bar chart laid out for an SVG view box.
type BarChart struct {
	Width, Height int
	Bars          []ChartBar
	Summary       string
	TestID        string
}

// ChartBar is one bar; Class styles it (chart-allocated, chart-useful, ...).
type ChartBar struct {
	Label, Value, Class string
	X, Y, W, H          float64
}
