package catalogadmin

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// registryPattern is a registry host (with a dot, or a port, or localhost)
// and an optional repository path prefix.
var registryPattern = regexp.MustCompile(`^([a-z0-9-]+(\.[a-z0-9-]+)+|localhost)(:[0-9]+)?(/[a-z0-9._-]+)*$`)

// ParseRegistries reads the allowlist editor: one registry per line, blank
// lines ignored, duplicates dropped.
func ParseRegistries(text string) ([]string, error) {
	var out, problems []string
	for line := range strings.Lines(text) {
		r := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(line)), "/")
		if r == "" {
			continue
		}
		if !registryPattern.MatchString(r) {
			problems = append(problems, fmt.Sprintf("%q is not a registry: write a host like nvcr.io, optionally with a path like docker.io/vllm, without https:// or a tag.", r))
			continue
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return out, nil
}

// SetAllowlist replaces the image registry allowlist. New launches and
// publishing check against it at once; then the cluster's copy is written,
// and if that fails the error is a *ClusterSyncError with the saved list.
func (a *Admin) SetAllowlist(ctx context.Context, actor Actor, text string) ([]string, error) {
	regs, err := ParseRegistries(text)
	if err != nil {
		return nil, err
	}
	before, err := a.Store.SetImageAllowlist(ctx, regs, actor.Username, a.now())
	if err != nil {
		return nil, err
	}
	if !slices.Equal(before, regs) {
		if err := a.record(ctx, actor, ActionAllowlistUpdate, "image-allowlist", map[string]any{"before": before, "after": regs}); err != nil {
			return nil, err
		}
	}
	// Postgres first, then the cluster: the portal's checks already use
	// the new list; an unchanged save still rewrites a drifted copy.
	if a.Cluster != nil {
		if err := a.Cluster.Apply(ctx, regs); err != nil {
			return regs, &ClusterSyncError{Registries: regs, Err: err}
		}
	}
	return regs, nil
}

// PriceForm is the price editor's input as typed.
type PriceForm struct {
	Flavor, Resource, USDPerHour string
	// EffectiveFrom is a date, YYYY-MM-DD, in UTC.
	EffectiveFrom string
}

// SetPrice stores a price per GPU-hour from its effective date on. Dates
// before today are refused so past costs do not change; a price effective
// today applies from now.
func (a *Admin) SetPrice(ctx context.Context, actor Actor, f PriceForm) (store.GPUPrice, error) {
	var problems []string
	f.Flavor, f.Resource = strings.TrimSpace(f.Flavor), strings.TrimSpace(f.Resource)
	if f.Flavor == "" || f.Resource == "" {
		problems = append(problems, "Choose the flavor and accelerator resource the price is for.")
	}
	usd, err := money.Parse(f.USDPerHour)
	if err != nil || usd < 0 || usd > 1e6*money.Dollar {
		problems = append(problems, "The price is a number of US dollars per GPU-hour, zero or more, like 2.50.")
	}
	now := a.now()
	today := now.Truncate(24 * time.Hour)
	from, err := time.Parse(time.DateOnly, strings.TrimSpace(f.EffectiveFrom))
	switch {
	case err != nil:
		problems = append(problems, "The effective date is a date like 2026-12-01.")
	case from.Before(today):
		problems = append(problems, "The effective date cannot be in the past: past costs keep the price they had.")
	case from.Equal(today):
		from = now
	}
	if len(problems) > 0 {
		return store.GPUPrice{}, &ValidationError{Problems: problems}
	}
	p := store.GPUPrice{Flavor: f.Flavor, Resource: f.Resource, EffectiveFrom: from, USDPerHour: usd, SetBy: actor.Username}
	if err := a.Store.SetPrice(ctx, p); err != nil {
		return store.GPUPrice{}, err
	}
	return p, a.record(ctx, actor, ActionPriceSet, f.Flavor+"/"+f.Resource, map[string]any{
		"usd_per_hour": usd, "effective_from": from.Format(time.RFC3339)})
}

// Prices lists every price, past and future.
func (a *Admin) Prices(ctx context.Context) ([]store.GPUPrice, error) {
	return a.Store.AllPrices(ctx)
}
