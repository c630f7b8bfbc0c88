package cost

import (
	"context"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/store"
)

// PriceStore stores prices.
type PriceStore interface {
	AddPrice(ctx context.Context, p store.GPUPrice) error
}

// PriceFile is the seed price list (deploy/local/prices.yaml).
type PriceFile struct {
	Prices []struct {
		Flavor        string    `json:"flavor"`
		Resource      string    `json:"resource"`
		USDPerHour    money.USD `json:"usdPerHour"`
		EffectiveFrom time.Time `json:"effectiveFrom"`
	} `json:"prices"`
}

// SeedPrices stores the prices of a price file; prices already stored with
// the same effective date are kept, so seeding at every start is safe.
func SeedPrices(ctx context.Context, s PriceStore, path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("seed prices: %w", err)
	}
	var f PriceFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return 0, fmt.Errorf("seed prices from %s: %w", path, err)
	}
	for _, p := range f.Prices {
		if p.Flavor == "" || p.Resource == "" || p.USDPerHour < 0 {
			return 0, fmt.Errorf("seed prices from %s: flavor %q resource %q: flavor, resource and a non-negative price are required", path, p.Flavor, p.Resource)
		}
		if err := s.AddPrice(ctx, store.GPUPrice{Flavor: p.Flavor, Resource: p.Resource, EffectiveFrom: p.EffectiveFrom.UTC(),
			USDPerHour: p.USDPerHour, SetBy: "seed:" + path}); err != nil {
			return 0, err
		}
	}
	return len(f.Prices), nil
}
