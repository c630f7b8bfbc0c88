// Package migrations holds the numbered SQL schema files of the portal's
// database, embedded into the binary and applied at start-up.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() fs.FS {
	return files
}
