package store

import (
	"context"
	"testing"
)

// BenchmarkReadJobTogether is a job page's read of its job's rows: one
// batch of five statements, one round trip.
func BenchmarkReadJobTogether(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.LaunchManifest(s.ReadJobTogether(ctx, "team-vision", "pytorch-train-abcdefgh12"), "team-vision", "pytorch-train-abcdefgh12"); err == nil {
			b.Fatal("a manifest of a job never launched")
		}
	}
}
