package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"github.com/gantry-dev/gantry/internal/problem"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gantry-dev/gantry/internal/identity"
)

// Reasons a login callback is refused. Each is a distinct, expected
// failure with its own words for the person signing in.
var (
	ErrNoLoginInProgress = problem.New("no sign-in is in progress in this browser session", signInFailed(problem.BadRequest,
		"This sign-in response is not expected by this browser session: it was already used, it expired, or it was started in another browser."+SignInAgain))
	ErrStateMismatch = problem.New("the sign-in response does not belong to this browser session", signInFailed(problem.BadRequest,
		"The sign-in response does not match the sign-in this browser started (the state check failed), so it was refused."+SignInAgain))
	ErrProviderRefused = problem.New("the identity provider refused the sign-in", problem.Problem{Kind: problem.Forbidden, Title: "Sign-in was refused",
		Detail: "The identity provider refused the sign-in." + SignInAgain})
	ErrCodeExchange = problem.New("the sign-in code could not be redeemed at the identity provider", signInFailed(problem.Upstream,
		"The identity provider did not accept the sign-in code. It may have been used already or expired."+SignInAgain))
	ErrIDTokenInvalid = problem.New("the identity provider's ID token is not valid for this portal", signInFailed(problem.BadRequest,
		"The identity provider's ID token is not valid for this portal (wrong issuer, audience or signature), so it was refused."+SignInAgain))
	ErrNonceMismatch = problem.New("the ID token was issued for a different sign-in attempt", signInFailed(problem.BadRequest,
		"The identity provider's answer belongs to a different sign-in attempt (the nonce check failed), so it was refused."+SignInAgain))
	ErrMissingUsername = problem.New("the ID token does not name the user", signInFailed(problem.BadRequest,
		"The identity provider did not say who you are (no username in the ID token). Ask the Gantry admins to check the provider's configuration."))
)

// SignInAgain ends the words of a sign-in that failed in a way the person
// can retry.
const SignInAgain = " Go back to the home page to sign in again."

func signInFailed(k problem.Kind, detail string) problem.Problem {
	return problem.Problem{Kind: k, Title: "Sign-in could not be completed", Detail: detail}
}

// OIDCOptions configure the OpenID Connect relying party.
type OIDCOptions struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	Scopes       []string
	GroupsClaim  string
	// RedirectURL is the portal's /auth/callback URL.
	RedirectURL string
	// PostLogoutRedirectURL is where the IdP sends the browser after logout.
	PostLogoutRedirectURL string
	// Now is the clock used to check ID token expiry; nil means time.Now.
	Now func() time.Time
	// HTTPClient is used for discovery, token and key requests; nil means
	// identityProviderClient.
	HTTPClient *http.Client
}

// OIDC is the portal's relying party: it starts logins, completes them and
// builds the IdP logout URL.
type OIDC struct {
	oauth       oauth2.Config
	verifier    *oidc.IDTokenVerifier
	groupsClaim string
	endSession  string
	postLogout  string
	clientID    string
	httpClient  *http.Client
}

// Identity is what a verified ID token says about the user.
type Identity struct {
	// Issuer and Subject key the account; Username is for display and impersonation.
	Issuer   string
	Subject  string
	Username string
	Name     string
	Email    string
	Groups   []string
	// RawIDToken is kept for the id_token_hint at logout.
	RawIDToken string
}

// idleIdentityProviderConn is how long a connection to the identity
// provider is kept idle for the next request. A sign-in code is redeemed
// with a POST, which Go does not send again when a kept connection turns
// out closed: an identity provider (or a proxy before it) that closes idle
// connections first fails that sign-in with EOF. Node's HTTP server, under
// the dev IdP among others, closes them after 5 s; a CI run's sign-in 6 s
// after the one before got 502 ("could not be redeemed ... EOF").
const idleIdentityProviderConn = 4 * time.Second

// identityProviderClient is the HTTP client for the identity provider:
// a timeout, and connections not kept idle past idleIdentityProviderConn.
func identityProviderClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.IdleConnTimeout = idleIdentityProviderConn
	return &http.Client{Timeout: 10 * time.Second, Transport: t}
}

// NewOIDC discovers the provider at opts.Issuer and returns a relying party.
func NewOIDC(ctx context.Context, opts OIDCOptions) (*OIDC, error) {
	client := opts.HTTPClient
	if client == nil {
		client = identityProviderClient()
	}
	ctx = oidc.ClientContext(ctx, client)
	provider, err := oidc.NewProvider(ctx, opts.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OIDC provider %s: %w", opts.Issuer, err)
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := provider.Claims(&extra); err != nil {
		return nil, fmt.Errorf("read discovery of %s: %w", opts.Issuer, err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	groupsClaim := opts.GroupsClaim
	if groupsClaim == "" {
		groupsClaim = "groups"
	}
	return &OIDC{
		oauth: oauth2.Config{
			ClientID:     opts.ClientID,
			ClientSecret: opts.ClientSecret,
			Endpoint:     provider.Endpoint(),
			RedirectURL:  opts.RedirectURL,
			Scopes:       opts.Scopes,
		},
		verifier:    provider.VerifierContext(ctx, &oidc.Config{ClientID: opts.ClientID, Now: now}),
		groupsClaim: groupsClaim,
		endSession:  extra.EndSession,
		postLogout:  opts.PostLogoutRedirectURL,
		clientID:    opts.ClientID,
		httpClient:  client,
	}, nil
}

// BeginLogin stores a fresh state, nonce, PKCE verifier and the page to
// return to in the session, and returns the IdP authorization URL.
func (o *OIDC) BeginLogin(ctx context.Context, sm *scs.SessionManager, next string) (string, error) {
	in, authURL, err := o.StartLogin(next)
	if err != nil {
		return "", err
	}
	sm.Put(ctx, keyLoginState, in.State)
	sm.Put(ctx, keyNonce, in.Nonce)
	sm.Put(ctx, keyVerifier, in.Verifier)
	sm.Put(ctx, keyNext, in.Next)
	return authURL, nil
}

// StartLogin makes a fresh state, nonce and PKCE verifier and returns them,
// with the page to return to, for the caller to keep until the callback,
// together with the IdP authorization URL.
func (o *OIDC) StartLogin(next string) (LoginInProgress, string, error) {
	state, err := randomString()
	if err != nil {
		return LoginInProgress{}, "", fmt.Errorf("begin login: %w", err)
	}
	nonce, err := randomString()
	if err != nil {
		return LoginInProgress{}, "", fmt.Errorf("begin login: %w", err)
	}
	in := LoginInProgress{State: state, Nonce: nonce, Verifier: oauth2.GenerateVerifier(), Next: SafeNext(next)}
	return in, o.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(in.Verifier)), nil
}

// CompleteLogin checks the authorization response in query against the
// login stored in the session (which it consumes, so a response cannot be
// replayed), as FinishLogin does.
func (o *OIDC) CompleteLogin(ctx context.Context, sm *scs.SessionManager, query url.Values) (Identity, string, error) {
	return o.FinishLogin(ctx, LoginInProgress{
		State:    sm.PopString(ctx, keyLoginState),
		Nonce:    sm.PopString(ctx, keyNonce),
		Verifier: sm.PopString(ctx, keyVerifier),
		Next:     sm.PopString(ctx, keyNext),
	}, query)
}

// FinishLogin checks the authorization response in query against the
// login the browser started, redeems the code with the PKCE verifier and
// verifies the ID token and its nonce. It returns the identity and the
// local path to go to.
func (o *OIDC) FinishLogin(ctx context.Context, want LoginInProgress, query url.Values) (Identity, string, error) {
	next := SafeNext(want.Next)
	if e := query.Get("error"); e != "" {
		return Identity{}, next, fmt.Errorf("%w: %s %s", ErrProviderRefused, e, query.Get("error_description"))
	}
	if want.State == "" || want.Nonce == "" || want.Verifier == "" {
		return Identity{}, next, ErrNoLoginInProgress
	}
	if subtle.ConstantTimeCompare([]byte(want.State), []byte(query.Get("state"))) != 1 {
		return Identity{}, next, ErrStateMismatch
	}
	ctx = oidc.ClientContext(ctx, o.httpClient)
	tok, err := o.oauth.Exchange(ctx, query.Get("code"), oauth2.VerifierOption(want.Verifier))
	if err != nil {
		return Identity{}, next, fmt.Errorf("%w: %w", ErrCodeExchange, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, next, fmt.Errorf("%w: the token response has no id_token", ErrIDTokenInvalid)
	}
	id, err := o.VerifyIDToken(ctx, raw, want.Nonce)
	if err != nil {
		return Identity{}, next, err
	}
	return id, next, nil
}

// VerifyIDToken verifies the signature, issuer, audience and expiry of a raw
// ID token, checks its nonce in constant time, and reads the identity.
func (o *OIDC) VerifyIDToken(ctx context.Context, raw, nonce string) (Identity, error) {
	ctx = oidc.ClientContext(ctx, o.httpClient)
	tok, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrIDTokenInvalid, err)
	}
	if subtle.ConstantTimeCompare([]byte(tok.Nonce), []byte(nonce)) != 1 {
		return Identity{}, ErrNonceMismatch
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: decode claims: %w", ErrIDTokenInvalid, err)
	}
	id := Identity{
		Issuer:     tok.Issuer,
		Subject:    tok.Subject,
		Username:   stringClaim(claims, "preferred_username"),
		Name:       stringClaim(claims, "name"),
		Email:      stringClaim(claims, "email"),
		Groups:     listClaim(claims, o.groupsClaim),
		RawIDToken: raw,
	}
	if id.Username == "" {
		id.Username = tok.Subject
	}
	if id.Username == "" {
		return Identity{}, ErrMissingUsername
	}
	if tok.Subject == "" {
		return Identity{}, fmt.Errorf("%w: the ID token has no subject", ErrIDTokenInvalid)
	}
	if err := refuseReserved(id); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// ReservedNameError refuses a login whose username or group starts with
// system:, which Kubernetes reserves for its own components: even with the
// impersonation prefix, such a name has no business in the portal.
type ReservedNameError struct {
	// What is "username" or "group"; Name is the refused value.
	What, Name string
}

// Problem says why the account is not signed in and who can change that.
func (e *ReservedNameError) Problem() problem.Problem {
	return problem.Problem{Kind: problem.Forbidden, Title: "Sign-in was refused",
		Detail: "Your identity provider account has the " + e.What + " \"" + e.Name + "\", which starts with \"system:\", a prefix Kubernetes reserves for its own components. This portal does not sign in such accounts. Ask your identity provider's admins to rename it."}
}

func (e *ReservedNameError) Error() string {
	return fmt.Sprintf("the identity provider gives you the %s %q, which starts with %q, a prefix Kubernetes reserves for its own components", e.What, e.Name, identity.ReservedPrefix)
}

func refuseReserved(id Identity) error {
	if identity.Reserved(id.Username) {
		return &ReservedNameError{What: "username", Name: id.Username}
	}
	for _, g := range id.Groups {
		if identity.Reserved(g) {
			return &ReservedNameError{What: "group", Name: g}
		}
	}
	return nil
}

// LogoutURL returns the IdP's RP-initiated logout URL, or "" when the
// provider does not offer an end_session_endpoint.
func (o *OIDC) LogoutURL(idTokenHint string) string {
	if o.endSession == "" {
		return ""
	}
	u, err := url.Parse(o.endSession)
	if err != nil {
		return ""
	}
	q := u.Query()
	if idTokenHint != "" {
		q.Set("id_token_hint", idTokenHint)
	}
	if o.postLogout != "" {
		q.Set("post_logout_redirect_uri", o.postLogout)
	}
	q.Set("client_id", o.clientID)
	u.RawQuery = q.Encode()
	return u.String()
}

// SafeNext returns next if it is a local absolute path, else "/". It
// refuses anything that would leave the portal (open redirects).
func SafeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if strings.ContainsAny(next, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func stringClaim(claims map[string]any, name string) string {
	s, _ := claims[name].(string)
	return s
}

// listClaim reads a claim that is a list of strings or a single string.
func listClaim(claims map[string]any, name string) []string {
	switch v := claims[name].(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			if s, ok := item.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{}
}
