package cost

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// EndpointHours is the endpoint proxy's hourly usage table.
type EndpointHours interface {
	EndpointHourlyUsageOfTeam(ctx context.Context, team string, from, to time.Time) ([]store.EndpointUsageHour, error)
}

// StoreEndpointUsage reads what endpoints served from the proxy's hourly
// counts: requests, and tokens (prompt and completion) where answers
// reported usage.
type StoreEndpointUsage struct {
	Hours EndpointHours
}

// EndpointUsage sums the team's endpoints' hours starting in [from, to), per endpoint.
func (s StoreEndpointUsage) EndpointUsage(ctx context.Context, team string, from, to time.Time) ([]EndpointUsage, error) {
	hours, err := s.Hours.EndpointHourlyUsageOfTeam(ctx, team, from, to)
	if err != nil {
		return nil, err
	}
	var out []EndpointUsage
	for _, h := range hours {
		if len(out) == 0 || out[len(out)-1].Endpoint != h.Name {
			out = append(out, EndpointUsage{Endpoint: h.Name})
		}
		e := &out[len(out)-1]
		e.Requests += h.Requests
		e.Tokens += h.PromptTokens + h.CompletionTokens
	}
	return out, nil
}

// ReclaimEpisodes is the idle reclaim loop's record of its reclaims.
type ReclaimEpisodes interface {
	ReclaimedSince(ctx context.Context, from time.Time) ([]store.IdleEpisode, error)
}

// StoreReclaims reads what idle reclaim stopped or scaled down from its episodes.
type StoreReclaims struct {
	Episodes ReclaimEpisodes
}

// Reclaims lists the team's reclaims in [from, to), with the GPUs they
// freed and the idle GPU-hours and money before them.
func (s StoreReclaims) Reclaims(ctx context.Context, team string, from, to time.Time) ([]Reclaim, error) {
	eps, err := s.Episodes.ReclaimedSince(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("reclaims of %s: %w", team, err)
	}
	var out []Reclaim
	for _, e := range eps {
		if e.Team != team || e.ActedAt == nil || !e.ActedAt.Before(to) {
			continue
		}
		out = append(out, Reclaim{Job: e.Name, Action: e.Action, GPUsFreed: e.GPUsFreed, GPUHours: e.IdleGPUHours, USD: e.IdleCostUSD})
	}
	return out, nil
}
