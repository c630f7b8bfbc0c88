package config

import (
	"flag"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/gantry/internal/identity"
	"github.com/gantry-dev/gantry/internal/kube"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func baseEnv() map[string]string {
	return map[string]string{
		"GANTRY_OIDC_ISSUER":        "http://127.0.0.1:5556",
		"GANTRY_OIDC_CLIENT_ID":     "gantry",
		"GANTRY_OIDC_CLIENT_SECRET": "secret",
		"GANTRY_DATABASE_URL":       "postgres://gantry@127.0.0.1:55432/gantry",
	}
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := Load(nil, envFrom(baseEnv()))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8080", cfg.Listen)
	assert.Equal(t, "http://127.0.0.1:8080", cfg.PublicURL.String())
	assert.Equal(t, []string{"openid", "profile", "email", "groups"}, cfg.OIDCScopes)
	assert.Equal(t, "groups", cfg.OIDCGroupsClaim)
	assert.Equal(t, []string{"gantry-admins"}, cfg.AdminGroups)
	assert.Equal(t, 30*time.Minute, cfg.SessionIdleTimeout)
	assert.Equal(t, 12*time.Hour, cfg.SessionLifetime)
	assert.Equal(t, slog.LevelInfo, cfg.LogLevel)
	assert.False(t, cfg.SecureCookies())
	assert.Equal(t, identity.Prefixes{UserPrefix: "oidc:", GroupPrefix: "oidc:"}, cfg.Identities)
	assert.Equal(t, 30*24*time.Hour, cfg.TokenOwnerInactivity)
	assert.Equal(t, 60, cfg.DatabaseMaxConns)
}

func TestLoadImpersonationPrefixes(t *testing.T) {
	env := baseEnv()
	env["GANTRY_IMPERSONATION_USER_PREFIX"] = "corp:"
	env["GANTRY_IMPERSONATION_GROUP_PREFIX"] = "corp-groups:"
	cfg, err := Load(nil, envFrom(env))
	require.NoError(t, err)
	assert.Equal(t, identity.Prefixes{UserPrefix: "corp:", GroupPrefix: "corp-groups:"}, cfg.Identities)

	cfg, err = Load([]string{"--impersonation-user-prefix", "idp:", "--impersonation-group-prefix", "idp-group:", "--token-owner-inactivity", "168h"}, envFrom(env))
	require.NoError(t, err)
	assert.Equal(t, identity.Prefixes{UserPrefix: "idp:", GroupPrefix: "idp-group:"}, cfg.Identities, "flags override the environment")
	assert.Equal(t, 7*24*time.Hour, cfg.TokenOwnerInactivity)
	impersonated := kube.ForUser(&rest.Config{}, cfg.Identities, "alice", []string{"vision-researchers"})
	assert.Equal(t, "idp:alice", impersonated.Impersonate.UserName)
	assert.Equal(t, []string{"idp-group:vision-researchers"}, impersonated.Impersonate.Groups)
}

func TestLoadFlagsOverrideEnv(t *testing.T) {
	env := baseEnv()
	env["GANTRY_LISTEN"] = "127.0.0.1:9999"
	env["GANTRY_ADMIN_GROUPS"] = "a, b"
	cfg, err := Load([]string{"--listen", "0.0.0.0:8443", "--public-url", "https://gantry.example.com/", "--log-level", "debug"}, envFrom(env))
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:8443", cfg.Listen)
	assert.Equal(t, "https://gantry.example.com", cfg.PublicURL.String())
	assert.True(t, cfg.SecureCookies())
	assert.Equal(t, []string{"a", "b"}, cfg.AdminGroups)
	assert.Equal(t, slog.LevelDebug, cfg.LogLevel)
}

func TestLoadInvalid(t *testing.T) {
	cases := map[string]struct {
		env     map[string]string
		args    []string
		wantErr string
	}{
		"missing issuer":       {env: map[string]string{"GANTRY_OIDC_ISSUER": ""}, wantErr: "OIDC issuer is required"},
		"missing client id":    {env: map[string]string{"GANTRY_OIDC_CLIENT_ID": ""}, wantErr: "client id is required"},
		"missing secret":       {env: map[string]string{"GANTRY_OIDC_CLIENT_SECRET": ""}, wantErr: "client secret is required"},
		"missing database":     {env: map[string]string{"GANTRY_DATABASE_URL": ""}, wantErr: "database URL is required"},
		"bad public url":       {args: []string{"--public-url", "ftp://x"}, wantErr: "scheme must be http or https"},
		"no openid scope":      {env: map[string]string{"GANTRY_OIDC_SCOPES": "profile"}, wantErr: "must include openid"},
		"bad idle timeout":     {env: map[string]string{"GANTRY_SESSION_IDLE_TIMEOUT": "soon"}, wantErr: "session idle timeout"},
		"idle beyond lifetime": {args: []string{"--session-idle-timeout", "2h", "--session-lifetime", "1h"}, wantErr: "must not exceed"},
		"bad log level":        {args: []string{"--log-level", "loud"}, wantErr: "log level"},
		"bad listen":           {args: []string{"--listen", "nope"}, wantErr: "listen address"},
		"stray argument":       {args: []string{"extra"}, wantErr: "unexpected arguments"},
		"debug on the listen address": {args: []string{"--listen", "127.0.0.1:8080", "--debug-listen", "127.0.0.1:8080"},
			wantErr: "debug listen address must differ"},
		"bad debug listen":     {args: []string{"--debug-listen", "6060"}, wantErr: "debug listen address"},
		"leader flag not bool": {env: map[string]string{"GANTRY_LEADER_ELECTION": "sometimes"}, wantErr: "GANTRY_LEADER_ELECTION must be true or false"},
		"lease shorter than renew": {env: map[string]string{"GANTRY_LEADER_ELECTION": "true", "GANTRY_LEADER_ELECTION_LEASE_DURATION": "5s"},
			wantErr: "lease duration > renew deadline"},
		"bad retry period":  {env: map[string]string{"GANTRY_LEADER_ELECTION_RETRY_PERIOD": "0s"}, wantErr: "leader election retry period"},
		"empty user prefix": {args: []string{"--impersonation-user-prefix", ""}, wantErr: "impersonation user prefix"},
		"system group prefix": {env: map[string]string{"GANTRY_IMPERSONATION_GROUP_PREFIX": "system:"},
			wantErr: "impersonation group prefix \"system:\": must not be empty or start with \"system:\""},
		"bad token inactivity": {args: []string{"--token-owner-inactivity", "-1h"}, wantErr: "token owner inactivity"},
		"no database connections": {env: map[string]string{"GANTRY_DATABASE_MAX_CONNS": "0"},
			wantErr: `database max conns: "0" is not a positive whole number`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := Load(tc.args, envFrom(env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestLoadHelpListsFlags(t *testing.T) {
	_, err := Load([]string{"--help"}, envFrom(baseEnv()))
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, err.Error(), "-oidc-issuer")
	assert.NotContains(t, err.Error(), "secret\"", "secrets are not shown as defaults")
	assert.NotContains(t, err.Error(), "postgres://")
}

func TestLoadLeaderElection(t *testing.T) {
	cfg, err := Load(nil, envFrom(baseEnv()))
	require.NoError(t, err)
	assert.Equal(t, LeaderElection{Namespace: "default", Name: "gantry", LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, cfg.LeaderElection, "off by default: one process runs its loops")

	env := baseEnv()
	env["GANTRY_LEADER_ELECTION"] = "true"
	env["POD_NAMESPACE"] = "gantry-system"
	env["POD_NAME"] = "gantry-7d9f-abc"
	env["GANTRY_LEADER_ELECTION_NAME"] = "gantry-leader"
	env["GANTRY_LEADER_ELECTION_LEASE_DURATION"] = "4s"
	env["GANTRY_LEADER_ELECTION_RENEW_DEADLINE"] = "3s"
	env["GANTRY_LEADER_ELECTION_RETRY_PERIOD"] = "500ms"
	cfg, err = Load(nil, envFrom(env))
	require.NoError(t, err)
	assert.Equal(t, LeaderElection{Enabled: true, Namespace: "gantry-system", Name: "gantry-leader", PodName: "gantry-7d9f-abc",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}, cfg.LeaderElection)
}
