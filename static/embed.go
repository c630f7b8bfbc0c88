// Package static embeds Gantry's stylesheet, icons and optional scripts so
// the binary serves them without files on disk.
package static

import "embed"

// FS holds css/, js/ and favicon.svg; serve it under /static/.
//
//go:embed css js favicon.svg
var FS embed.FS
