package audit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/store"
)

func TestRecord(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, stacktest.Postgres(t))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, store.Migrate(ctx, s.SQL(), slog.New(slog.NewTextHandler(io.Discard, nil))))

	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	log := New(s, func() time.Time { return at })

	cases := map[string]struct {
		event   Event
		wantVia string
		wantDet string
	}{
		"browser login": {event: Event{Actor: "alice", Action: ActionLogin, IP: "127.0.0.1"}, wantVia: "browser", wantDet: `{}`},
		"token revoke":  {event: Event{Actor: "bob", Action: ActionTokenRevoke, Target: "api-token/7", Detail: map[string]any{"name": "ci"}, Via: "token:3"}, wantVia: "token:3", wantDet: `{"name":"ci"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, log.Record(ctx, tc.event))
			got, err := s.AuditEntries(ctx, store.AuditFilter{Actor: tc.event.Actor, Limit: 1})
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.event.Action, got[0].Action)
			assert.Equal(t, tc.event.Target, got[0].Target)
			assert.Equal(t, tc.wantVia, got[0].Via)
			assert.JSONEq(t, tc.wantDet, string(got[0].Detail))
			assert.True(t, at.Equal(got[0].At))
		})
	}
}
