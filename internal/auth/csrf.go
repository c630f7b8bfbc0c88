package auth

import (
	"crypto/hmac"
	"crypto/sha256"
)

// DeriveKey derives a 32-byte key for purpose from a secret all replicas
// share (the OIDC client secret), so every replica accepts the CSRF
// cookies of the others without another secret to distribute.
func DeriveKey(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("gantry/" + purpose))
	return m.Sum(nil)
}
