package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTemplateVersionsAreImmutableAndIdempotent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	tv := func(digest string) TemplateVersion {
		return TemplateVersion{Name: "pytorch-train", Kind: "training", Title: "PyTorch", Spec: json.RawMessage(`{"name":"pytorch-train","d":"` + digest + `"}`), Digest: digest, CreatedBy: "system"}
	}
	cases := []struct {
		name        string
		digest      string
		wantVersion int
		wantCreated bool
	}{
		{"first save is version 1", "aaa", 1, true},
		{"same content keeps its version", "aaa", 1, false},
		{"changed content is version 2", "bbb", 2, true},
		{"changing back is a new version, not a rewrite", "aaa", 3, true},
	}
	for _, tc := range cases {
		saved, created, err := s.SaveTemplateVersion(ctx, tv(tc.digest))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.wantVersion, saved.Version, tc.name)
		assert.Equal(t, tc.wantCreated, created, tc.name)
	}
	v1, err := s.TemplateVersionOf(ctx, "pytorch-train", 1)
	require.NoError(t, err)
	assert.Equal(t, "aaa", v1.Digest)
	latest, err := s.TemplateVersionOf(ctx, "pytorch-train", 0)
	require.NoError(t, err)
	assert.Equal(t, 3, latest.Version)
	list, err := s.LatestTemplates(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, 3, list[0].Version)
	_, err = s.TemplateVersionOf(ctx, "nope", 0)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestTemplateSeedingFromSeveralReplicasMakesOneVersion(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	created := make([]bool, 4)
	for i := range created {
		wg.Go(func() {
			_, c, err := s.SaveTemplateVersion(ctx, TemplateVersion{Name: "nb", Kind: "notebook", Title: "NB", Spec: json.RawMessage(`{}`), Digest: "x"})
			assert.NoError(t, err)
			created[i] = c
		})
	}
	wg.Wait()
	n := 0
	for _, c := range created {
		if c {
			n++
		}
	}
	assert.Equal(t, 1, n)
}

func TestLaunchRecordsAreUniquePerLaunchID(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	l := Launch{LaunchID: "abcdefgh12", Team: "vision", Namespace: "team-vision", Name: "pytorch-train-abcdefgh12", Kind: "training",
		Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{"gpus":"1"}`),
		Objects: StringList{"Job/pytorch-train-abcdefgh12"}, Manifest: "kind: Job", CreatedAt: time.Now().UTC()}
	first, err := s.RecordLaunch(ctx, l)
	require.NoError(t, err)
	again, err := s.RecordLaunch(ctx, l)
	require.ErrorIs(t, err, ErrDuplicateLaunch)
	assert.Equal(t, first.ID, again.ID)

	got, err := s.LaunchByName(ctx, "team-vision", "pytorch-train-abcdefgh12")
	require.NoError(t, err)
	assert.Equal(t, StringList{"Job/pytorch-train-abcdefgh12"}, got.Objects)
	assert.JSONEq(t, `{"gpus":"1"}`, string(got.Parameters))
	require.NoError(t, s.MarkLaunchDeleted(ctx, "team-vision", got.Name, "alice", time.Now()))
	got, err = s.LaunchByID(ctx, "abcdefgh12")
	require.NoError(t, err)
	assert.NotNil(t, got.DeletedAt)
	_, err = s.LaunchByID(ctx, "missing000")
	assert.ErrorIs(t, err, ErrNotFound)
}

// A job list page spans several teams: one look-up says which of its
// workloads were launched through the portal, namespace by namespace.
func TestLaunchedAcrossNamespaces(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for i, ws := range []WorkloadName{{"team-vision", "train-a"}, {"team-nlp", "train-b"}} {
		_, err := s.RecordLaunch(ctx, Launch{LaunchID: fmt.Sprintf("launched%02d", i), Team: ws.Namespace[len("team-"):], Namespace: ws.Namespace, Name: ws.Name,
			Kind: "training", Template: "pytorch-train", TemplateVersion: 1, Owner: "alice", Parameters: json.RawMessage(`{}`), CreatedAt: time.Now().UTC()})
		require.NoError(t, err)
	}
	got, err := s.Launched(ctx, []WorkloadName{{"team-vision", "train-a"}, {"team-nlp", "train-b"},
		{"team-vision", "train-b"}, {"team-nlp", "by-kubectl"}})
	require.NoError(t, err)
	assert.Equal(t, map[WorkloadName]bool{{"team-vision", "train-a"}: true, {"team-nlp", "train-b"}: true}, got,
		"train-b of vision and by-kubectl of nlp have no launch record")
	got, err = s.Launched(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}
