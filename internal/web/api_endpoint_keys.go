package web

import (
	"time"

	"github.com/gantry-dev/gantry/internal/store"
)

// apiEndpointKey is an endpoint key as the API lists it (never its secret).
type apiEndpointKey struct {
	ID        int64      `json:"id"`
	Label     string     `json:"label"`
	Prefix    string     `json:"prefix"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	RevokedBy *string    `json:"revokedBy,omitempty"`
	Active    bool       `json:"active"`
}

func apiEndpointKeyOf(k store.EndpointKey, now time.Time) apiEndpointKey {
	return apiEndpointKey{ID: k.ID, Label: k.Label, Prefix: k.Prefix, CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt,
		ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, RevokedBy: k.RevokedBy, Active: k.Active(now)}
}
