// Package views holds Gantry's templ components. Every component takes typed
// props; handlers in internal/web fill them and render with the request's
// context.
package views

import "time"

// Role texts shown to users and used in NavUser.Role and TeamCard.Role.
const (
	RoleResearcher = "researcher"
	RoleLead       = "team lead"
	RoleAdmin      = "admin"
)

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
	FlashInfo    = "info"
)

// CSRFField is the form field gorilla/csrf reads the token from.
const CSRFField = "gorilla.csrf.Token"

// Nav is what every page's frame needs: who is signed in, the CSRF token for
// the logout form, flash messages and the active navigation item.
type Nav struct {
	// User is nil for anonymous pages (for example an error before login).
	User      *NavUser
	CSRFToken string
	Flash     []Flash
	// Active is the key of the current navigation item: home, jobs,
	// quota-requests, approvals, templates, teams, prices, audit, cluster, profile.
	Active string
	// PendingApprovals is the badge on the Approvals item for leads and admins.
	PendingApprovals int
	// UnreadNotifications is the count beside the notifications link.
	UnreadNotifications int
	// Stale says, while the Kubernetes API server does not answer, that
	// what the page shows of the cluster may be out of date; "" otherwise.
	Stale string
}

// NavUser is the signed-in user as the frame shows them.
type NavUser struct {
	// Username is the IdP's preferred_username; Name the display name.
	Username, Name string
	// Role is one of RoleResearcher, RoleLead, RoleAdmin: the highest role held.
	Role    string
	IsLead  bool
	IsAdmin bool
	// InTeam is true for members of at least one team: only they have a
	// team page to link to.
	InTeam bool
}

// Flash is a one-time message shown at the top of the next page.
type Flash struct {
	// Kind is FlashSuccess, FlashError or FlashInfo.
	Kind string
	Text string
}

// HomeProps is the home page: the user's teams with their queues and quota.
type HomeProps struct {
	Teams []TeamCard
	// ClusterError is set when the cluster could not be read; it is shown in
	// words and the cards show what is known from the database.
	ClusterError string
}

// TeamCard is one team on the home page.
type TeamCard struct {
	Name, DisplayName string
	// Role is the user's role in this team (RoleResearcher or RoleLead).
	Role                                string
	Namespace, ClusterQueue, LocalQueue string
	CostCenter                          string
	// Flavors are quota and usage per flavor and resource; empty when unknown.
	Flavors           []FlavorQuota
	Pending, Admitted int
	// QueueInactive is Kueue's reason when the ClusterQueue admits nothing
	// (for example a missing flavor); empty when the queue is active.
	QueueInactive string
}

// FlavorQuota is the quota of one resource in one flavor, in the resource's
// base unit (GPUs, CPUs, bytes).
type FlavorQuota struct {
	Flavor, Resource string
	Nominal, Used    int64
	// Borrowed is the part of Used lent by the cohort beyond Nominal.
	Borrowed int64
	// BorrowingLimit is how much may be borrowed; negative means no limit
	// (queue.NoLimit), zero means the team cannot borrow.
	BorrowingLimit int64
}

// NoTeamProps is the page for a signed-in user whose IdP groups map to no team.
type NoTeamProps struct {
	Username string
	Groups   []string
	// AdminContact says whom to ask, for example "#gpu-platform on Slack";
	// empty means "the Gantry admins".
	AdminContact string
}

// ErrorProps is an error page in words.
type ErrorProps struct {
	Status         int
	Title, Message string
	// RequestID lets support find the log line; omitted when empty.
	RequestID string
}

// ProfileProps is the profile page with personal API tokens.
type ProfileProps struct {
	User   NavUser
	Email  string
	Groups []string
	Tokens []APIToken
	// NewToken is the secret of a token created by the previous request; it
	// is shown once and never again.
	NewToken string
	Form     TokenForm
	// Now decides which tokens are shown as expired; zero means time.Now().
	Now time.Time
}

// APIToken is one personal API token as listed on the profile page and,
// with its Owner, on the admins' token page.
type APIToken struct {
	ID                   uint
	Name, Prefix         string
	CreatedAt, ExpiresAt time.Time
	LastUsedAt           *time.Time
	Revoked              bool
	ReadOnly             bool
	// Owner is the owner's username (admin page only).
	Owner string
}

// Token form field names, also the keys of TokenForm.Errors.
const (
	FieldTokenName      = "name"
	FieldTokenExpiresIn = "expires_in_days"
	FieldTokenReadOnly  = "read_only"
)

// TokenForm is the create-token form as the user typed it, with per-field
// errors keyed by FieldTokenName / FieldTokenExpiresIn.
type TokenForm struct {
	Name, ExpiresInDays string
	ReadOnly            bool
	// MaxDays is the longest life a token may be given.
	MaxDays int
	Errors  map[string]string
}

// AdminTokensProps is the admins' list of everyone's API tokens.
type AdminTokensProps struct {
	Tokens []APIToken
	// Limit is how many of the newest tokens are listed.
	Limit int
	// Now decides which tokens are shown as expired; zero means time.Now().
	Now time.Time
}
