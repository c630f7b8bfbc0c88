package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
)

// TestAdminAllowlistSaveWritesTheClustersCopy: an admin saves the allowlist
// and the ConfigMap the image admission policy reads follows; when the
// cluster cannot be written, the page says so in words. Each portal writes
// into its own namespace, never the gantry-system one every test shares.
func TestAdminAllowlistSaveWritesTheClustersCopy(t *testing.T) {
	env := stacktest.Stack(t)
	cases := map[string]struct {
		namespace func(t *testing.T) string
		wantFlash string
		wantKind  string
		wantCM    bool
	}{
		"cluster takes the list": {
			namespace: func(t *testing.T) string { return env.Namespace(t, "gantry-system", nil) },
			wantFlash: "Saved the allowlist: 2 registries.", wantKind: "success", wantCM: true,
		},
		"cluster cannot be written": {
			namespace: func(*testing.T) string { return "gantry-system-that-does-not-exist" },
			wantFlash: "The allowlist was saved and Gantry's own checks use it now, but the cluster's copy (which kubectl is held to) could not be updated",
			wantKind:  "error",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := tc.namespace(t)
			portal := StartPortal(t, WithEnv("GANTRY_SYSTEM_NAMESPACE", ns))
			erin := NewBrowser(t, portal)
			erin.LoginAs("erin")
			erin.Open("/admin/allowlist")
			erin.setText(testID("allowlist-registries"), "nvcr.io\nghcr.io/acme\n")
			erin.Submit(testID("allowlist-submit"))
			assert.Contains(t, erin.TestIDText("flash"), tc.wantFlash)
			assert.True(t, erin.exists(`[data-testid="flash"][data-kind="`+tc.wantKind+`"]`), "a %s message", tc.wantKind)
			assert.Equal(t, "nvcr.io\nghcr.io/acme", erin.Value(testID("allowlist-registries")), "the portal keeps the saved list either way")
			if !tc.wantCM {
				return
			}
			cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "gantry-image-allowlist", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "nvcr.io\nghcr.io/acme", cm.Data["registries"])
		})
	}
}
