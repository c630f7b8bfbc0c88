package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// TokenPrefix starts every personal API token, so leaked tokens are easy to
// recognise (and to scan for).
const TokenPrefix = "gty_"

// NewToken is a freshly generated API token: Secret is shown to the user
// once; only Hash is stored, with Prefix for display.
type NewToken struct {
	Secret string
	Hash   []byte
	Prefix string
}

// GenerateToken returns a token of 32 random bytes, base64url-encoded with
// the gty_ prefix.
func GenerateToken() (NewToken, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return NewToken{}, fmt.Errorf("generate API token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return NewToken{Secret: secret, Hash: HashToken(secret), Prefix: secret[:len(TokenPrefix)+6]}, nil
}

// HashToken returns the SHA-256 of a token secret, as stored.
func HashToken(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// looksLikeToken filters obvious garbage before a database lookup.
func looksLikeToken(s string) bool {
	return strings.HasPrefix(s, TokenPrefix) && len(s) == len(TokenPrefix)+43
}
