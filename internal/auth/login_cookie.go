package auth

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/securecookie"
)

// LoginInProgress is a login the browser started: the state sent to the
// IdP, the nonce the ID token must carry, the PKCE verifier and the local
// page to return to.
type LoginInProgress struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"p"`
}

const (
	loginCookieName = "gantry_login"
	// loginCookiePath limits the cookie to the one request that reads it.
	loginCookiePath = "/auth/callback"
	// loginCookieLife bounds how long a person may take at the IdP's form.
	loginCookieLife = 10 * time.Minute
)

// LoginCookie keeps a login in progress in the browser, encrypted and
// authenticated by gorilla/securecookie, so that an anonymous visit to the
// login page writes nothing to the database.
type LoginCookie struct {
	codec  *securecookie.SecureCookie
	secure bool
}

// NewLoginCookie derives the cookie's signing and encryption keys from
// secret, which must be equal on every replica.
func NewLoginCookie(secret []byte, secure bool) *LoginCookie {
	codec := securecookie.New(DeriveKey(string(secret), "login-cookie/mac"), DeriveKey(string(secret), "login-cookie/aes"))
	codec.MaxAge(int(loginCookieLife / time.Second))
	codec.SetSerializer(securecookie.JSONEncoder{})
	return &LoginCookie{codec: codec, secure: secure}
}

// Save sets the cookie holding the login.
func (l *LoginCookie) Save(w http.ResponseWriter, in LoginInProgress) error {
	v, err := l.codec.Encode(loginCookieName, in)
	if err != nil {
		return fmt.Errorf("save login in progress: %w", err)
	}
	http.SetCookie(w, l.cookie(v, int(loginCookieLife/time.Second)))
	return nil
}

// Take reads the login the browser started and clears the cookie, so an
// answer from the IdP is matched once. No cookie, or one that is expired or
// not ours, is ErrNoLoginInProgress.
func (l *LoginCookie) Take(w http.ResponseWriter, r *http.Request) (LoginInProgress, error) {
	c, err := r.Cookie(loginCookieName)
	if errors.Is(err, http.ErrNoCookie) {
		return LoginInProgress{}, ErrNoLoginInProgress
	}
	if err != nil {
		return LoginInProgress{}, fmt.Errorf("%w: %w", ErrNoLoginInProgress, err)
	}
	http.SetCookie(w, l.cookie("", -1))
	var in LoginInProgress
	if err := l.codec.Decode(loginCookieName, c.Value, &in); err != nil {
		return LoginInProgress{}, fmt.Errorf("%w: %w", ErrNoLoginInProgress, err)
	}
	return in, nil
}

func (l *LoginCookie) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: loginCookieName, Value: value, Path: loginCookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: l.secure,
		// Lax: the IdP sends the browser back with a top-level GET.
		SameSite: http.SameSiteLaxMode,
	}
}
