// Package config holds the portal's one typed configuration, read from
// command-line flags with environment variables as defaults.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-dev/gantry/internal/identity"
)

// Config is the complete configuration of the portal.
type Config struct {
	// Listen is the address the HTTP server binds to.
	Listen string
	// ProbeListen, when set, serves /healthz, /readyz and /metrics on their
	// own address and not on Listen.
	ProbeListen string
	// DebugListen, when set, serves Go's profiles (/debug/pprof/) on their
	// own address; off by default, and never on Listen or ProbeListen.
	DebugListen string
	// TrustedProxies are the reverse proxies (addresses or CIDR ranges)
	// whose X-Forwarded-For is believed; none by default.
	TrustedProxies []string
	// PublicURL is the externally visible base URL (scheme, host, no path).
	PublicURL *url.URL
	// OIDCIssuer is the issuer URL of the OpenID Connect provider.
	OIDCIssuer string
	// OIDCClientID and OIDCClientSecret identify the portal at the provider.
	OIDCClientID     string
	OIDCClientSecret string
	// OIDCScopes are requested at login.
	OIDCScopes []string
	// OIDCGroupsClaim names the ID token claim that lists the user's groups.
	OIDCGroupsClaim string
	// DatabaseURL is a PostgreSQL DSN.
	DatabaseURL string
	// DatabaseMaxConns bounds this replica's connections to PostgreSQL.
	DatabaseMaxConns int
	// Kubeconfig is a kubeconfig path; empty means in-cluster configuration.
	Kubeconfig string
	// PrometheusURL is the base URL of the Prometheus API.
	PrometheusURL string
	// PrometheusWait is how long a job page waits for the job's GPU figures
	// before it shows them as on their way (its next refresh brings them).
	PrometheusWait time.Duration
	// AdminGroups are the IdP groups whose members are portal admins.
	AdminGroups []string
	// SeedTeams is an optional teams.yaml upserted into the database at start (development).
	SeedTeams string
	// SeedTemplates is an optional directory of template YAML files stored as
	// template versions at start; unchanged files keep their version.
	SeedTemplates string
	// SeedPrices is an optional prices.yaml of GPU prices stored at start;
	// empty means prices.yaml beside SeedTeams, if there is one.
	SeedPrices string
	// LedgerInterval is how often ended runs are written to the cost ledger.
	LedgerInterval time.Duration
	// AcceptanceInterval is how often the leader advances acceptance runs;
	// AcceptanceStepTimeout how long a step waits for the workload.
	AcceptanceInterval    time.Duration
	AcceptanceStepTimeout time.Duration
	// ImageRegistries seeds the image allowlist (registry hosts or path
	// prefixes) on the first start; then admins edit it in the portal.
	ImageRegistries []string
	// SystemNamespace holds the portal's cluster-wide objects, such as the
	// image allowlist ConfigMap the admission policy reads.
	SystemNamespace string
	// Cohort is the Kueue cohort the ClusterQueues of teams made in the portal join.
	Cohort string
	// QuotaExpiryInterval is how often expired quota grants are looked for.
	QuotaExpiryInterval time.Duration
	// SessionIdleTimeout ends a session after this long without a request.
	SessionIdleTimeout time.Duration
	// SessionLifetime ends a session this long after login, active or not.
	SessionLifetime time.Duration
	// Identities are the prefixes of the username and groups the portal
	// impersonates, so an IdP value never becomes a system: identity; team
	// RoleBindings bind the prefixed groups.
	Identities identity.Prefixes
	// TokenOwnerInactivity stops an API token when its owner has not signed
	// in for this long.
	TokenOwnerInactivity time.Duration
	// LogLevel is the minimum level of structured logs.
	LogLevel slog.Level
	// LeaderElection runs background loops on one replica at a time.
	LeaderElection LeaderElection
	// IdleReclaim gives idle GPUs back (see internal/reclaim).
	IdleReclaim IdleReclaim
}

// IdleReclaim configures the idle GPU reclaim: the defaults of every
// template kind and team without an admin's policy, and the bounds such a
// policy must keep.
type IdleReclaim struct {
	// Enabled runs the reclaim loop on the leading replica.
	Enabled bool
	// Interval is how often every job is looked at.
	Interval time.Duration
	// Threshold is the GPU utilization (percent) under which GPUs are idle.
	Threshold float64
	// Window is how long GPUs must stay under the threshold.
	Window time.Duration
	// MinWindow and MaxWindow bound the window an admin may set.
	MinWindow, MaxWindow time.Duration
	// Grace is the time between a notebook's warning and its stop.
	Grace time.Duration
	// Extension is what "keep it running" holds a notebook for; MaxExtension bounds it.
	Extension, MaxExtension time.Duration
	// NowWindow is how long a job's GPU samples must all stay under the
	// threshold for its page to call it idle now.
	NowWindow time.Duration
}

// DefaultImageRegistries is the image allowlist a fresh install starts
// with (GANTRY_IMAGE_REGISTRIES), comma-separated.
const DefaultImageRegistries = "nvcr.io,quay.io/jupyter,docker.io/vllm"

// LeaderElection says which Lease replicas compete for to run the
// background loops (see internal/leader).
type LeaderElection struct {
	// Enabled is off by default: a single process runs its loops itself.
	Enabled bool
	// Namespace and Name identify the Lease; Namespace defaults to the
	// pod's namespace (POD_NAMESPACE).
	Namespace string
	Name      string
	// PodName identifies the replica (POD_NAME, else the hostname).
	PodName string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's timings.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// SecureCookies reports whether cookies must carry the Secure attribute,
// which is the case when the portal is served over TLS.
func (c Config) SecureCookies() bool {
	return c.PublicURL != nil && c.PublicURL.Scheme == "https"
}

// Load parses args (without the program name) with values from getenv as
// defaults, and validates the result.
func Load(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("gantry", flag.ContinueOnError)
	var usage strings.Builder
	fs.SetOutput(&usage)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}

	var (
		cfg                                 Config
		publicURL, scopes, admins, logLevel string
		registries, trustedProxies          string
		idle, lifetime                      string
		tokenInactivity                     string
		expiry                              string
		ledgerInterval, prometheusWait      string
		databaseMaxConns                    string
		acceptanceInterval, acceptanceStep  string
		leaseDuration, renewDeadline, retry string
		idleThreshold                       string
		idleDurations                       = map[string]*string{}
	)
	fs.StringVar(&cfg.Listen, "listen", env("GANTRY_LISTEN", "127.0.0.1:8080"), "HTTP listen address")
	fs.StringVar(&cfg.ProbeListen, "probe-listen", env("GANTRY_PROBE_LISTEN", ""), "listen address of /healthz, /readyz and /metrics (empty: the HTTP listen address)")
	fs.StringVar(&cfg.DebugListen, "debug-listen", env("GANTRY_DEBUG_LISTEN", ""), "listen address of Go's profiles, /debug/pprof/ (empty: off; keep it private, e.g. 127.0.0.1:6060)")
	fs.StringVar(&trustedProxies, "trusted-proxies", env("GANTRY_TRUSTED_PROXIES", ""), "comma-separated addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed (default none)")
	fs.StringVar(&publicURL, "public-url", env("GANTRY_PUBLIC_URL", ""), "public base URL (default http://<listen>)")
	fs.StringVar(&cfg.OIDCIssuer, "oidc-issuer", env("GANTRY_OIDC_ISSUER", ""), "OIDC issuer URL")
	fs.StringVar(&cfg.OIDCClientID, "oidc-client-id", env("GANTRY_OIDC_CLIENT_ID", ""), "OIDC client id")
	fs.StringVar(&cfg.OIDCClientSecret, "oidc-client-secret", "", "OIDC client secret (env GANTRY_OIDC_CLIENT_SECRET)")
	fs.StringVar(&scopes, "oidc-scopes", env("GANTRY_OIDC_SCOPES", "openid,profile,email,groups"), "comma-separated OIDC scopes")
	fs.StringVar(&cfg.OIDCGroupsClaim, "oidc-groups-claim", env("GANTRY_OIDC_GROUPS_CLAIM", "groups"), "ID token claim holding groups")
	fs.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL DSN (env GANTRY_DATABASE_URL)")
	fs.StringVar(&databaseMaxConns, "database-max-conns", env("GANTRY_DATABASE_MAX_CONNS", "60"), "most connections to PostgreSQL this replica opens (replicas × this must stay under PostgreSQL's max_connections)")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", env("GANTRY_KUBECONFIG", ""), "kubeconfig path (empty: in-cluster)")
	fs.StringVar(&cfg.PrometheusURL, "prometheus-url", env("GANTRY_PROMETHEUS_URL", ""), "Prometheus base URL")
	fs.StringVar(&prometheusWait, "prometheus-wait", env("GANTRY_PROMETHEUS_WAIT", "25ms"), "how long a job page waits for its GPU figures from Prometheus before showing them as on their way")
	fs.StringVar(&admins, "admin-groups", env("GANTRY_ADMIN_GROUPS", "gantry-admins"), "comma-separated admin IdP groups")
	fs.StringVar(&cfg.SeedTeams, "seed-teams", env("GANTRY_SEED_TEAMS", ""), "teams.yaml to upsert at start (development)")
	fs.StringVar(&cfg.SeedTemplates, "seed-templates", env("GANTRY_SEED_TEMPLATES", ""), "directory of template YAML files to store at start")
	fs.StringVar(&cfg.SeedPrices, "seed-prices", env("GANTRY_SEED_PRICES", ""), "prices.yaml of GPU prices to store at start")
	fs.StringVar(&ledgerInterval, "ledger-interval", env("GANTRY_LEDGER_INTERVAL", "10s"), "how often ended runs are written to the cost ledger")
	fs.StringVar(&acceptanceInterval, "acceptance-interval", env("GANTRY_ACCEPTANCE_INTERVAL", "2s"), "how often the leader advances pool acceptance runs")
	fs.StringVar(&acceptanceStep, "acceptance-step-timeout", env("GANTRY_ACCEPTANCE_STEP_TIMEOUT", "15m"), "how long an acceptance run's step waits for the workload")
	fs.StringVar(&registries, "image-registries", env("GANTRY_IMAGE_REGISTRIES", DefaultImageRegistries), "comma-separated allowed image registries")
	fs.StringVar(&cfg.SystemNamespace, "system-namespace", env("GANTRY_SYSTEM_NAMESPACE", "gantry-system"), "namespace of the image allowlist ConfigMap the admission policy reads")
	fs.StringVar(&cfg.Cohort, "cohort", env("GANTRY_COHORT", "gantry"), "Kueue cohort of new teams' ClusterQueues")
	fs.StringVar(&expiry, "quota-expiry-interval", env("GANTRY_QUOTA_EXPIRY_INTERVAL", "30s"), "how often to revert ended quota grants and take back approvals that reached the cluster but never committed")
	fs.StringVar(&idle, "session-idle-timeout", env("GANTRY_SESSION_IDLE_TIMEOUT", "30m"), "session idle timeout")
	fs.StringVar(&lifetime, "session-lifetime", env("GANTRY_SESSION_LIFETIME", "12h"), "absolute session lifetime")
	fs.StringVar(&cfg.Identities.UserPrefix, "impersonation-user-prefix", env("GANTRY_IMPERSONATION_USER_PREFIX", identity.DefaultPrefix), "prefix of the username the portal impersonates")
	fs.StringVar(&cfg.Identities.GroupPrefix, "impersonation-group-prefix", env("GANTRY_IMPERSONATION_GROUP_PREFIX", identity.DefaultPrefix), "prefix of the groups the portal impersonates and team RoleBindings bind")
	fs.StringVar(&tokenInactivity, "token-owner-inactivity", env("GANTRY_TOKEN_OWNER_INACTIVITY", "720h"), "API tokens stop working when their owner has not signed in for this long")
	leaderDefault, leaderEnvErr := strconv.ParseBool(env("GANTRY_LEADER_ELECTION", "false"))
	fs.BoolVar(&cfg.LeaderElection.Enabled, "leader-election", leaderDefault, "run background loops on one replica at a time (Lease)")
	fs.StringVar(&cfg.LeaderElection.Namespace, "leader-election-namespace", env("GANTRY_LEADER_ELECTION_NAMESPACE", env("POD_NAMESPACE", "default")), "namespace of the leader election Lease")
	fs.StringVar(&cfg.LeaderElection.Name, "leader-election-name", env("GANTRY_LEADER_ELECTION_NAME", "gantry"), "name of the leader election Lease")
	fs.StringVar(&leaseDuration, "leader-election-lease-duration", env("GANTRY_LEADER_ELECTION_LEASE_DURATION", "15s"), "how long a Lease holds without renewal")
	fs.StringVar(&renewDeadline, "leader-election-renew-deadline", env("GANTRY_LEADER_ELECTION_RENEW_DEADLINE", "10s"), "how long the leader retries renewing before it stops leading")
	fs.StringVar(&retry, "leader-election-retry-period", env("GANTRY_LEADER_ELECTION_RETRY_PERIOD", "2s"), "wait between attempts to acquire or renew the Lease")
	cfg.LeaderElection.PodName = getenv("POD_NAME")
	idleDefault, idleEnvErr := strconv.ParseBool(env("GANTRY_IDLE_RECLAIM", "true"))
	fs.BoolVar(&cfg.IdleReclaim.Enabled, "idle-reclaim", idleDefault, "reclaim idle GPUs: warn then stop idle notebooks, scale idle endpoints to their minimum, flag idle training")
	fs.StringVar(&idleThreshold, "idle-threshold", env("GANTRY_IDLE_THRESHOLD", "5"), "default GPU utilization (percent) under which GPUs are idle")
	for _, d := range []struct{ flag, env, def, usage string }{
		{"idle-window", "GANTRY_IDLE_WINDOW", "60m", "default time GPUs must stay under the threshold before a reclaim"},
		{"idle-min-window", "GANTRY_IDLE_MIN_WINDOW", "10m", "shortest window an admin's idle policy may set"},
		{"idle-max-window", "GANTRY_IDLE_MAX_WINDOW", "24h", "longest window an admin's idle policy may set"},
		{"idle-grace", "GANTRY_IDLE_GRACE", "15m", "default time between an idle notebook's warning and its stop"},
		{"idle-extension", "GANTRY_IDLE_EXTENSION", "2h", "default time \"keep it running\" holds an idle notebook"},
		{"idle-max-extension", "GANTRY_IDLE_MAX_EXTENSION", "8h", "longest extension an admin's idle policy may set"},
		{"idle-reclaim-interval", "GANTRY_IDLE_RECLAIM_INTERVAL", "1m", "how often the idle reclaim looks at every job"},
		{"idle-now-window", "GANTRY_IDLE_NOW_WINDOW", "2m", "how long a job's GPU samples must all stay under the threshold for it to show as idle now"},
	} {
		v := new(string)
		idleDurations[d.flag] = v
		fs.StringVar(v, d.flag, env(d.env, d.def), d.usage)
	}
	fs.StringVar(&logLevel, "log-level", env("GANTRY_LOG_LEVEL", "info"), "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, fmt.Errorf("%w\n%s", err, usage.String())
		}
		return Config{}, fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	// Secrets are not flag defaults, so --help never prints them.
	if cfg.OIDCClientSecret == "" {
		cfg.OIDCClientSecret = getenv("GANTRY_OIDC_CLIENT_SECRET")
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = getenv("GANTRY_DATABASE_URL")
	}

	var errs []error
	if leaderEnvErr != nil {
		errs = append(errs, fmt.Errorf("GANTRY_LEADER_ELECTION must be true or false: %w", leaderEnvErr))
	}
	if idleEnvErr != nil {
		errs = append(errs, fmt.Errorf("GANTRY_IDLE_RECLAIM must be true or false: %w", idleEnvErr))
	}
	cfg.OIDCScopes = splitList(scopes)
	cfg.AdminGroups = splitList(admins)
	cfg.ImageRegistries = splitList(registries)
	cfg.TrustedProxies = splitList(trustedProxies)
	for _, p := range cfg.TrustedProxies {
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				errs = append(errs, fmt.Errorf("trusted proxy %q is neither an IP address nor a CIDR range", p))
			}
		}
	}

	var err error
	if cfg.SessionIdleTimeout, err = parsePositiveDuration(idle); err != nil {
		errs = append(errs, fmt.Errorf("session idle timeout: %w", err))
	}
	if cfg.QuotaExpiryInterval, err = parsePositiveDuration(expiry); err != nil {
		errs = append(errs, fmt.Errorf("quota expiry interval: %w", err))
	}
	if cfg.LedgerInterval, err = parsePositiveDuration(ledgerInterval); err != nil {
		errs = append(errs, fmt.Errorf("ledger interval: %w", err))
	}
	if n, err := strconv.Atoi(databaseMaxConns); err != nil || n < 1 {
		errs = append(errs, fmt.Errorf("database max conns: %q is not a positive whole number", databaseMaxConns))
	} else {
		cfg.DatabaseMaxConns = n
	}
	if cfg.PrometheusWait, err = parsePositiveDuration(prometheusWait); err != nil {
		errs = append(errs, fmt.Errorf("prometheus wait: %w", err))
	}
	if cfg.AcceptanceInterval, err = parsePositiveDuration(acceptanceInterval); err != nil {
		errs = append(errs, fmt.Errorf("acceptance interval: %w", err))
	}
	if cfg.AcceptanceStepTimeout, err = parsePositiveDuration(acceptanceStep); err != nil {
		errs = append(errs, fmt.Errorf("acceptance step timeout: %w", err))
	}
	if cfg.SessionLifetime, err = parsePositiveDuration(lifetime); err != nil {
		errs = append(errs, fmt.Errorf("session lifetime: %w", err))
	}
	if cfg.TokenOwnerInactivity, err = parsePositiveDuration(tokenInactivity); err != nil {
		errs = append(errs, fmt.Errorf("token owner inactivity: %w", err))
	}
	for _, p := range []struct{ name, value string }{
		{"impersonation user prefix", cfg.Identities.UserPrefix},
		{"impersonation group prefix", cfg.Identities.GroupPrefix},
	} {
		if !identity.ValidPrefix(p.value) {
			errs = append(errs, fmt.Errorf("%s %q: must not be empty or start with %q, or an IdP name could become a Kubernetes system identity", p.name, p.value, identity.ReservedPrefix))
		}
	}
	for _, d := range []struct {
		name string
		raw  string
		dst  *time.Duration
	}{
		{"leader election lease duration", leaseDuration, &cfg.LeaderElection.LeaseDuration},
		{"leader election renew deadline", renewDeadline, &cfg.LeaderElection.RenewDeadline},
		{"leader election retry period", retry, &cfg.LeaderElection.RetryPeriod},
	} {
		if *d.dst, err = parsePositiveDuration(d.raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		}
	}
	ir := &cfg.IdleReclaim
	for flag, dst := range map[string]*time.Duration{"idle-window": &ir.Window, "idle-min-window": &ir.MinWindow, "idle-max-window": &ir.MaxWindow,
		"idle-grace": &ir.Grace, "idle-extension": &ir.Extension, "idle-max-extension": &ir.MaxExtension, "idle-reclaim-interval": &ir.Interval,
		"idle-now-window": &ir.NowWindow} {
		if *dst, err = parsePositiveDuration(*idleDurations[flag]); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
		}
	}
	if ir.Threshold, err = strconv.ParseFloat(idleThreshold, 64); err != nil || ir.Threshold <= 0 || ir.Threshold >= 100 {
		errs = append(errs, fmt.Errorf("idle threshold %q must be a percentage between 0 and 100", idleThreshold))
	}
	if ir.MinWindow > ir.MaxWindow || ir.Window < ir.MinWindow || ir.Window > ir.MaxWindow {
		errs = append(errs, fmt.Errorf("idle window %s must be within --idle-min-window %s and --idle-max-window %s", ir.Window, ir.MinWindow, ir.MaxWindow))
	}
	if ir.Extension > ir.MaxExtension {
		errs = append(errs, fmt.Errorf("idle extension %s must not exceed --idle-max-extension %s", ir.Extension, ir.MaxExtension))
	}
	if le := cfg.LeaderElection; le.Enabled && (le.RenewDeadline >= le.LeaseDuration || le.RetryPeriod >= le.RenewDeadline) {
		errs = append(errs, errors.New("leader election needs lease duration > renew deadline > retry period"))
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q: %w", logLevel, err))
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen address %q: %w", cfg.Listen, err))
	}
	if cfg.ProbeListen != "" {
		if _, _, err := net.SplitHostPort(cfg.ProbeListen); err != nil {
			errs = append(errs, fmt.Errorf("probe listen address %q: %w", cfg.ProbeListen, err))
		} else if cfg.ProbeListen == cfg.Listen {
			errs = append(errs, errors.New("probe listen address must differ from the listen address (leave it empty to serve probes there)"))
		}
	}
	if cfg.DebugListen != "" {
		if _, _, err := net.SplitHostPort(cfg.DebugListen); err != nil {
			errs = append(errs, fmt.Errorf("debug listen address %q: %w", cfg.DebugListen, err))
		} else if cfg.DebugListen == cfg.Listen || cfg.DebugListen == cfg.ProbeListen {
			errs = append(errs, errors.New("debug listen address must differ from the listen and probe addresses"))
		}
	}
	if publicURL == "" {
		publicURL = "http://" + cfg.Listen
	}
	if cfg.PublicURL, err = parseBaseURL(publicURL); err != nil {
		errs = append(errs, fmt.Errorf("public URL: %w", err))
	}
	if cfg.OIDCIssuer == "" {
		errs = append(errs, errors.New("OIDC issuer is required (GANTRY_OIDC_ISSUER)"))
	} else if _, err := parseBaseURL(cfg.OIDCIssuer); err != nil {
		errs = append(errs, fmt.Errorf("OIDC issuer: %w", err))
	}
	if cfg.OIDCClientID == "" {
		errs = append(errs, errors.New("OIDC client id is required (GANTRY_OIDC_CLIENT_ID)"))
	}
	if cfg.OIDCClientSecret == "" {
		errs = append(errs, errors.New("OIDC client secret is required (GANTRY_OIDC_CLIENT_SECRET)"))
	}
	if !contains(cfg.OIDCScopes, "openid") {
		errs = append(errs, errors.New("OIDC scopes must include openid"))
	}
	if cfg.OIDCGroupsClaim == "" {
		errs = append(errs, errors.New("OIDC groups claim must not be empty"))
	}
	if cfg.DatabaseURL == "" {
		errs = append(errs, errors.New("database URL is required (GANTRY_DATABASE_URL)"))
	}
	if cfg.PrometheusURL != "" {
		if _, err := parseBaseURL(cfg.PrometheusURL); err != nil {
			errs = append(errs, fmt.Errorf("prometheus URL: %w", err))
		}
	}
	if cfg.SessionLifetime > 0 && cfg.SessionIdleTimeout > cfg.SessionLifetime {
		errs = append(errs, errors.New("session idle timeout must not exceed the session lifetime"))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return cfg, nil
}

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q: host is missing", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

func parsePositiveDuration(raw string) (time.Duration, error) {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", raw, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", raw)
	}
	return d, nil
}

func splitList(raw string) []string {
	var out []string
	for _, part := range strings.Split(raw, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
