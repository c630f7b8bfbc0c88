package views

import (
	"fmt"
	"strconv"
	"time"
)

// Quota request form fields, also the keys of QuotaForm.Errors.
const (
	FieldQuotaTeam     = "team"
	FieldQuotaFlavor   = "flavor"
	FieldQuotaResource = "resource"
	FieldQuotaDelta    = "delta"
	FieldQuotaUntil    = "until"
	FieldQuotaReason   = "reason"
	FieldQuotaComment  = "comment"
	FieldQuotaDecision = "decision"
)

// QuotaPageProps is the quota requests page: the form, the user's requests
// and the active grants of their teams.
type QuotaPageProps struct {
	// Teams are the teams the user may ask quota for.
	Teams   []string
	Flavors []QuotaFlavorOption
	Form    QuotaForm
	Mine    []QuotaRequestRow
	Grants  []QuotaGrantRow
	// ClusterError says in words why current quota could not be read.
	ClusterError string
}

// QuotaFlavorOption is a GPU pool and the accelerator resources it offers.
type QuotaFlavorOption struct {
	Flavor    string
	Resources []string
}

// QuotaForm is the request form as typed, with errors per field.
type QuotaForm struct {
	Team, Flavor, Resource, Delta, Until, Reason string
	Errors                                       map[string]string
}

// QuotaRequestRow is one request as listed.
type QuotaRequestRow struct {
	ID                     int64
	Team, Flavor, Resource string
	Delta                  int64
	Until                  *time.Time
	Reason, Requester      string
	// Status is open, approved, rejected or withdrawn.
	Status, DecidedBy, Comment string
	CreatedAt                  time.Time
	DecidedAt                  *time.Time
	CanWithdraw                bool
}

// QuotaGrantRow is an active grant with the team's current quota from the cluster.
type QuotaGrantRow struct {
	RequestID              int64
	Team, Flavor, Resource string
	Delta                  int64
	AppliedAt              time.Time
	ExpiresAt              *time.Time
	// Nominal is the team's quota now, read from the cluster; -1 when unknown.
	Nominal int64
}

// ApprovalsProps is the leads' queue of open requests.
type ApprovalsProps struct {
	Requests     []ApprovalRow
	Grants       []QuotaGrantRow
	ClusterError string
}

// ApprovalRow is an open request with what the decider should know.
type ApprovalRow struct {
	QuotaRequestRow
	// Known is false when the cluster could not say; the figures are then zero.
	Known                          bool
	Nominal, Used, NewNominal      int64
	CohortFree, CohortNominal      int64
	Physical                       int64
	Pending                        int
	LongestWait                    time.Duration
	Ceiling                        int64
	HasCeiling                     bool
	PhysicalWarning, CannotApprove string
	// Own is set on the decider's own request: they cannot decide it.
	Own bool
}

// NotificationsProps lists a user's messages.
type NotificationsProps struct {
	Items []NotificationRow
}

// NotificationRow is one message.
type NotificationRow struct {
	Text, Link string
	At         time.Time
	Unread     bool
}

func signedAmount(resource string, n int64) string {
	if n > 0 {
		return "+" + formatAmount(resource, n)
	}
	return "−" + formatAmount(resource, -n)
}

func untilText(t *time.Time) string {
	if t == nil {
		return "until revoked"
	}
	return "until " + formatTime(*t)
}

func idStr(id int64) string { return strconv.FormatInt(id, 10) }

func quotaURL(format string, id int64) string { return fmt.Sprintf(format, id) }

func nominalText(resource string, n int64) string {
	if n < 0 {
		return "unknown"
	}
	return formatAmount(resource, n)
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func flavorNames(fs []QuotaFlavorOption) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Flavor)
	}
	return out
}

// flavorResources lists every accelerator resource of any flavor, once.
func flavorResources(fs []QuotaFlavorOption) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fs {
		for _, r := range f.Resources {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// waitText says how long the oldest pending workload has waited.
func waitText(d time.Duration) string {
	switch {
	case d <= 0:
		return "nothing waiting"
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	default:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
}
