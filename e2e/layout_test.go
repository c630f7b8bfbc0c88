package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPagesFitAPhoneScreen(t *testing.T) {
	portal := StartPortal(t)
	b := NewBrowser(t, portal)
	b.Resize(390, 844)
	b.LoginAs("bob")
	for _, path := range []string{"/", "/profile"} {
		b.Open(path)
		b.WaitForTestID("user-name")
		assert.False(t, b.OverflowsHorizontally(), "%s scrolls sideways at phone width", path)
	}
}
