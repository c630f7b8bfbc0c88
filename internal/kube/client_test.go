package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: secret}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`

func TestRESTConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(testKubeconfig), 0o600))

	cases := map[string]struct {
		path     string
		wantHost string
		wantErr  string
	}{
		"kubeconfig file":   {path: path, wantHost: "https://127.0.0.1:6443"},
		"missing file":      {path: filepath.Join(t.TempDir(), "nope"), wantErr: "load kubeconfig"},
		"empty: in-cluster": {path: "", wantErr: "load in-cluster config"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.path == "" {
				t.Setenv("KUBERNETES_SERVICE_HOST", "")
			}
			cfg, err := RESTConfig(tc.path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantHost, cfg.Host)
			clients, err := NewClients(cfg)
			require.NoError(t, err)
			assert.NotNil(t, clients.Kube)
			assert.NotNil(t, clients.Kueue)
		})
	}
}

func TestNewScheme(t *testing.T) {
	s, err := NewScheme()
	require.NoError(t, err)
	for _, gvk := range []string{"ClusterQueue", "LocalQueue", "ResourceFlavor", "Workload"} {
		assert.True(t, s.Recognizes(kueueGVK(gvk)), gvk)
	}
	assert.True(t, s.Recognizes(corev1GVK("Pod")))
}
