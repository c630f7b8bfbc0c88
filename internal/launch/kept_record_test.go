package launch

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gantry-dev/gantry/internal/store"
)

// A kept record reads back as the record it was made from, but for its
// manifest (a job page reads that with its rows), and every field of a
// store.Launch but those it is keyed by is carried: a field added to the
// record and not to keptRecord would read back empty from memory.
func TestKeptRecordKeepsEveryFieldButTheManifest(t *testing.T) {
	launchType, kept := reflect.TypeFor[store.Launch](), reflect.TypeFor[keptRecord]()
	for i := range launchType.NumField() {
		f := launchType.Field(i)
		switch f.Name {
		case "Manifest", "Namespace", "Name":
			continue
		}
		k, ok := kept.FieldByName(f.Name)
		if assert.True(t, ok, "a kept record keeps Launch.%s", f.Name) {
			assert.Equal(t, f.Type, k.Type, "Launch.%s", f.Name)
		}
	}

	at, deleted, by := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC), "bob"
	rec := store.Launch{ID: 7, LaunchID: "5f1c", Team: "vision", Namespace: "team-vision", Name: "train-a", Kind: "training",
		Template: "pytorch-train", TemplateVersion: 3, Owner: "alice", Parameters: json.RawMessage(`{"gpus":"2"}`),
		Objects: store.StringList{"Job/train-a"}, Manifest: "kind: Job", CreatedAt: at, DeletedAt: &deleted, DeletedBy: &by}
	for i, v := 0, reflect.ValueOf(rec); i < v.NumField(); i++ {
		assert.False(t, v.Field(i).IsZero(), "the test sets Launch.%s", v.Type().Field(i).Name)
	}
	want := rec
	want.Manifest = ""
	assert.Equal(t, want, keepRecord(rec).launch(keptName(rec.Namespace, rec.Name)))
}
