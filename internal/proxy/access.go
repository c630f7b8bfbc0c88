package proxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/audit"
	"github.com/gantry-dev/gantry/internal/store"
)

// Audit actions of this package.
const (
	ActionShare     = "notebook.share"
	ActionUnshare   = "notebook.unshare"
	ActionKeyCreate = "endpoint-key.create"
	ActionKeyRevoke = "endpoint-key.revoke"
)

// KeyPrefix starts every endpoint key, so a leaked one is recognisable
// (and never mistaken for a personal API token).
const KeyPrefix = "gek_"

// Key lifetimes a person may choose.
const (
	DefaultKeyDays = 90
	MaxKeyDays     = 365
)

// Store is what access needs from the database.
type Store interface {
	ShareNotebook(ctx context.Context, sh store.NotebookShare) error
	UnshareNotebook(ctx context.Context, team, name string) error
	NotebookShared(ctx context.Context, team, name string) (store.NotebookShare, error)
	CreateEndpointKey(ctx context.Context, k store.EndpointKey) (store.EndpointKey, error)
	EndpointKeyByHash(ctx context.Context, hash []byte) (store.EndpointKey, error)
	EndpointKeys(ctx context.Context, team, name string) ([]store.EndpointKey, error)
	RevokeEndpointKey(ctx context.Context, team, name string, id int64, by string, at time.Time) (store.EndpointKey, error)
}

// Access decides who may open notebooks and call endpoints, and keeps
// notebook shares and endpoint keys.
type Access struct {
	store Store
	audit *audit.Log
	now   func() time.Time
}

// NewAccess returns the access service; now is time.Now when nil.
func NewAccess(s Store, a *audit.Log, now func() time.Time) *Access {
	if now == nil {
		now = time.Now
	}
	return &Access{store: s, audit: a, now: now}
}

// Actor is who acts, for the audit log.
type Actor struct {
	Username string
	IP       string
	Via      string
}

// ErrRefused is a person who may not open a notebook, or a request to an
// endpoint without a valid key of that endpoint.
var ErrRefused = problem.New("refused", problem.Problem{Kind: problem.Forbidden, Title: "Not yours to open",
	Detail: "Only the notebook's owner can open it, and members of its team once the owner shares it from the job page."})

// ErrNotOwner is a share or unshare by someone other than the notebook's owner.
var ErrNotOwner = problem.New("only the notebook's owner can share it", problem.Problem{Kind: problem.Forbidden, Title: "Not allowed",
	Detail: "Only the notebook's owner can share it with the team or stop sharing it."})

// MayOpenNotebook reports whether username may open the team's notebook
// owned by owner: the owner always, a member of the team once the owner
// shared it (the caller has checked membership), nobody else.
func (a *Access) MayOpenNotebook(ctx context.Context, team, name, owner, username string, member bool) error {
	if username == owner {
		return nil
	}
	if !member {
		return fmt.Errorf("open notebook %s/%s as %s: not in the team: %w", team, name, username, ErrRefused)
	}
	if _, err := a.store.NotebookShared(ctx, team, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("open notebook %s/%s as %s: not shared with the team: %w", team, name, username, ErrRefused)
		}
		return err
	}
	return nil
}

// Shared reports whether the notebook is shared with its team.
func (a *Access) Shared(ctx context.Context, team, name string) (bool, error) {
	_, err := a.store.NotebookShared(ctx, team, name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// SetShared shares the notebook with its team or takes that back; only its
// owner may.
func (a *Access) SetShared(ctx context.Context, actor Actor, team, name, owner string, shared bool) error {
	if actor.Username != owner {
		return fmt.Errorf("share notebook %s/%s as %s: %w", team, name, actor.Username, ErrNotOwner)
	}
	action := ActionUnshare
	if shared {
		action = ActionShare
		if err := a.store.ShareNotebook(ctx, store.NotebookShare{Team: team, Name: name, SharedBy: actor.Username, SharedAt: a.now()}); err != nil {
			return err
		}
	} else if err := a.store.UnshareNotebook(ctx, team, name); err != nil {
		return err
	}
	return a.audit.Record(ctx, audit.Event{Actor: actor.Username, Action: action, Target: "notebook/" + team + "/" + name, IP: actor.IP, Via: actor.Via})
}

// NewKey is a key just made: Secret is shown once and never stored.
type NewKey struct {
	Key    store.EndpointKey
	Secret string
}

// CreateKey makes a key for the team's endpoint, valid for days days.
func (a *Access) CreateKey(ctx context.Context, actor Actor, team, name, label string, days int) (NewKey, error) {
	label = strings.TrimSpace(label)
	fields := problem.Fields{}
	if label == "" || len(label) > 100 {
		fields["label"] = "Name the key (1 to 100 characters), e.g. the program that will use it."
	}
	if days < 1 || days > MaxKeyDays {
		fields["days"] = fmt.Sprintf("A key lives 1 to %d days.", MaxKeyDays)
	}
	if len(fields) > 0 {
		return NewKey{}, fields
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return NewKey{}, fmt.Errorf("create endpoint key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	now := a.now()
	k, err := a.store.CreateEndpointKey(ctx, store.EndpointKey{Team: team, Name: name, Label: label, Hash: hashKey(secret),
		Prefix: secret[:len(KeyPrefix)+6], CreatedBy: actor.Username, CreatedAt: now, ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour)})
	if err != nil {
		return NewKey{}, err
	}
	if err := a.audit.Record(ctx, audit.Event{Actor: actor.Username, Action: ActionKeyCreate, Target: fmt.Sprintf("endpoint/%s/%s/key/%d", team, name, k.ID),
		Detail: map[string]any{"label": k.Label, "prefix": k.Prefix, "expires_at": k.ExpiresAt}, IP: actor.IP, Via: actor.Via}); err != nil {
		return NewKey{}, err
	}
	return NewKey{Key: k, Secret: secret}, nil
}

// Keys lists the endpoint's keys, newest first.
func (a *Access) Keys(ctx context.Context, team, name string) ([]store.EndpointKey, error) {
	return a.store.EndpointKeys(ctx, team, name)
}

// RevokeKey revokes one of the endpoint's keys.
func (a *Access) RevokeKey(ctx context.Context, actor Actor, team, name string, id int64) (store.EndpointKey, error) {
	k, err := a.store.RevokeEndpointKey(ctx, team, name, id, actor.Username, a.now())
	if err != nil {
		return store.EndpointKey{}, err
	}
	if err := a.audit.Record(ctx, audit.Event{Actor: actor.Username, Action: ActionKeyRevoke, Target: fmt.Sprintf("endpoint/%s/%s/key/%d", team, name, k.ID),
		Detail: map[string]any{"label": k.Label, "prefix": k.Prefix}, IP: actor.IP, Via: actor.Via}); err != nil {
		return store.EndpointKey{}, err
	}
	return k, nil
}

// Authenticate checks the Authorization header of a call to the team's
// endpoint: a Bearer key of this endpoint, neither revoked nor expired.
func (a *Access) Authenticate(ctx context.Context, team, name, authorization string) (store.EndpointKey, error) {
	scheme, secret, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return store.EndpointKey{}, fmt.Errorf("endpoint %s/%s: no bearer key: %w", team, name, ErrRefused)
	}
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, KeyPrefix) {
		return store.EndpointKey{}, fmt.Errorf("endpoint %s/%s: not an endpoint key: %w", team, name, ErrRefused)
	}
	hash := hashKey(secret)
	k, err := a.store.EndpointKeyByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return store.EndpointKey{}, fmt.Errorf("endpoint %s/%s: unknown key: %w", team, name, ErrRefused)
	}
	if err != nil {
		return store.EndpointKey{}, err
	}
	// The lookup was by hash; compare again in constant time all the same.
	if subtle.ConstantTimeCompare(k.Hash, hash) != 1 || k.Team != team || k.Name != name {
		return store.EndpointKey{}, fmt.Errorf("endpoint %s/%s: key %d is another endpoint's: %w", team, name, k.ID, ErrRefused)
	}
	if !k.Active(a.now()) {
		return store.EndpointKey{}, fmt.Errorf("endpoint %s/%s: key %d is revoked or expired: %w", team, name, k.ID, ErrRefused)
	}
	return k, nil
}

func hashKey(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}
