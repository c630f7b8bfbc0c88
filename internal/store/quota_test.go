package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/roster"
)

func TestWithdrawOnlyOwnOpenRequest(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	_, err := s.SaveTeam(ctx, roster.Team{Name: "vision"})
	require.NoError(t, err)
	r, err := s.CreateQuotaRequest(ctx, QuotaRequest{Team: "vision", Flavor: "h100", Resource: "nvidia.com/gpu", Delta: 2, Reason: "x", Requester: "alice", CreatedAt: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, QuotaOpen, r.Status)

	_, err = s.WithdrawQuotaRequest(ctx, r.ID, "bob", time.Now(), nil)
	assert.ErrorIs(t, err, ErrNotFound, "nobody withdraws someone else's request")
	got, err := s.WithdrawQuotaRequest(ctx, r.ID, "alice", time.Now(), nil)
	require.NoError(t, err)
	assert.Equal(t, QuotaWithdrawn, got.Status)
	_, err = s.WithdrawQuotaRequest(ctx, r.ID, "alice", time.Now(), nil)
	assert.ErrorIs(t, err, ErrNotOpen)
	_, err = s.DecideQuotaRequest(ctx, r.ID, func(QuotaRequest) (Decision, error) { return Decision{Approve: true}, nil })
	assert.ErrorIs(t, err, ErrNotOpen, "a withdrawn request cannot be decided")

	n, err := s.CountOpenQuotaRequests(ctx, []string{"vision"}, "bob")
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestNotificationsUnreadUntilRead(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := time.Now().UTC()
	require.NoError(t, s.Notify(ctx, Notification{Username: "alice", Text: "approved", CreatedAt: now}))
	require.NoError(t, s.Notify(ctx, Notification{Username: "bob", Text: "other", CreatedAt: now}))
	n, err := s.UnreadNotifications(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, s.MarkNotificationsRead(ctx, "alice", now))
	n, err = s.UnreadNotifications(ctx, "alice")
	require.NoError(t, err)
	assert.Zero(t, n)
	list, err := s.Notifications(ctx, "alice", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.NotNil(t, list[0].ReadAt)
}

func TestAuditPageFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	day := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		require.NoError(t, s.AppendAudit(ctx, AuditEntry{At: day.Add(time.Duration(i) * time.Hour), Actor: "alice", Action: "quota.request",
			Detail: json.RawMessage(`{"team":"vision"}`)}))
	}
	require.NoError(t, s.AppendAudit(ctx, AuditEntry{At: day.AddDate(0, 0, 3), Actor: "erin", Action: "team.create", Detail: json.RawMessage(`{"team":"nlp"}`)}))

	cases := map[string]struct {
		q    AuditQuery
		want int
	}{
		"by team":       {q: AuditQuery{Team: "vision"}, want: 5},
		"by actor":      {q: AuditQuery{Actor: "erin"}, want: 1},
		"by action":     {q: AuditQuery{Action: "team.create"}, want: 1},
		"by date range": {q: AuditQuery{From: day.AddDate(0, 0, 1), To: day.AddDate(0, 0, 5)}, want: 1},
		"nothing":       {q: AuditQuery{Team: "platform"}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, more, err := s.AuditPage(ctx, tc.q)
			require.NoError(t, err)
			assert.Len(t, got, tc.want)
			assert.False(t, more)
		})
	}

	first, more, err := s.AuditPage(ctx, AuditQuery{Team: "vision", Limit: 2})
	require.NoError(t, err)
	require.True(t, more)
	require.Len(t, first, 2)
	assert.True(t, first[0].At.After(first[1].At), "newest first")
	var seen []int64
	for page := first; ; {
		for _, e := range page {
			seen = append(seen, e.ID)
		}
		if !more {
			break
		}
		page, more, err = s.AuditPage(ctx, AuditQuery{Team: "vision", Limit: 2, Before: page[len(page)-1].ID})
		require.NoError(t, err)
	}
	assert.Len(t, seen, 5, "paging visits every entry once")
}
