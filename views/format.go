package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// navItem is one entry of the main navigation.
type navItem struct {
	Key, Label, Href string
	// Badge is shown when positive (pending approvals).
	Badge int
}

// testID joins the parts of a data-testid ("team", "vision" → "team-vision").
func testID(parts ...string) string { return strings.Join(parts, "-") }

// navItems lists what the user's role may open, in display order.
func navItems(nav Nav) []navItem {
	if nav.User == nil {
		return nil
	}
	items := []navItem{
		{Key: "home", Label: "Home", Href: "/"},
		{Key: "jobs", Label: "Jobs", Href: "/jobs"},
		{Key: "launch", Label: "Launch", Href: "/launch"},
		{Key: "quota-requests", Label: "Quota requests", Href: "/quota-requests"},
	}
	if nav.User.InTeam {
		items = append(items, navItem{Key: "team", Label: "Team", Href: "/team"})
	}
	if nav.User.IsLead || nav.User.IsAdmin {
		items = append(items, navItem{Key: "approvals", Label: "Approvals", Href: "/approvals", Badge: nav.PendingApprovals})
	}
	if nav.User.IsAdmin {
		items = append(items,
			navItem{Key: "templates", Label: "Templates", Href: "/admin/templates"},
			navItem{Key: "teams", Label: "Teams", Href: "/admin/teams"},
			navItem{Key: "prices", Label: "Prices", Href: "/admin/prices"},
			navItem{Key: "idle", Label: "Idle reclaim", Href: "/admin/idle"},
			navItem{Key: "allowlist", Label: "Images", Href: "/admin/allowlist"},
			navItem{Key: "audit", Label: "Audit log", Href: "/admin/audit"},
			navItem{Key: "tokens", Label: "API tokens", Href: "/admin/tokens"},
			navItem{Key: "cluster", Label: "Cluster", Href: "/admin/cluster"},
			navItem{Key: "acceptance", Label: "Acceptance", Href: "/admin/acceptance"},
		)
	}
	return items
}

func flashClass(kind string) string {
	switch kind {
	case FlashSuccess, FlashError, FlashInfo:
		return "flash flash-" + kind
	default:
		return "flash flash-info"
	}
}

// resourceLabel names a Kubernetes resource the way people say it.
func resourceLabel(resource string) string {
	switch {
	case resource == "nvidia.com/gpu" || resource == "amd.com/gpu":
		return "GPUs"
	case strings.HasPrefix(resource, "nvidia.com/mig-"):
		return "MIG " + strings.TrimPrefix(resource, "nvidia.com/mig-") + " slices"
	case resource == "cpu":
		return "CPUs"
	case resource == "memory":
		return "memory"
	default:
		return resource
	}
}

// formatAmount prints a quantity in the resource's unit; memory in binary units.
func formatAmount(resource string, v int64) string {
	if v == 0 || (resource != "memory" && resource != "ephemeral-storage") {
		return strconv.FormatInt(v, 10)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f := float64(v)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// quotaSummary is the sentence read by screen readers and shown beside a bar.
func quotaSummary(f FlavorQuota) string {
	s := fmt.Sprintf("%s of %s %s in use", formatAmount(f.Resource, f.Used), formatAmount(f.Resource, f.Nominal), resourceLabel(f.Resource))
	if f.Borrowed > 0 {
		s += fmt.Sprintf(", %s borrowed from the cohort", formatAmount(f.Resource, f.Borrowed))
	}
	return s
}

func borrowingText(f FlavorQuota) string {
	switch {
	case f.BorrowingLimit < 0:
		return "may borrow idle quota from other teams"
	case f.BorrowingLimit == 0:
		return "cannot borrow"
	default:
		return fmt.Sprintf("may borrow up to %s more from other teams", formatAmount(f.Resource, f.BorrowingLimit))
	}
}

// bar is the geometry of a quota bar on a 0–100 scale: the nominal quota
// track, the used part within it and the borrowed part beyond it.
type bar struct {
	Nominal, Used, Borrowed, BorrowedX float64
}

func quotaBar(f FlavorQuota) bar {
	scale := max(f.Nominal, f.Used, 1)
	pct := func(v int64) float64 { return float64(min(max(v, 0), scale)) * 100 / float64(scale) }
	own := min(f.Used-f.Borrowed, f.Nominal)
	return bar{
		Nominal:   pct(f.Nominal),
		Used:      pct(own),
		Borrowed:  pct(f.Borrowed),
		BorrowedX: pct(own),
	}
}

func svgNum(v float64) string {
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func teamTitle(t TeamCard) string {
	if t.DisplayName != "" {
		return t.DisplayName
	}
	return t.Name
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return formatTime(*t)
}

// tokenState is how a token's status reads in the list.
func tokenState(tok APIToken, now time.Time) string {
	if now.IsZero() {
		now = time.Now()
	}
	switch {
	case tok.Revoked:
		return "revoked"
	case !tok.ExpiresAt.IsZero() && !now.Before(tok.ExpiresAt):
		return "expired"
	default:
		return "active"
	}
}

func revokeURL(id uint) string {
	return fmt.Sprintf("/profile/tokens/%d/revoke", id)
}

func adminRevokeURL(id uint) string {
	return fmt.Sprintf("/admin/tokens/%d/revoke", id)
}

func tokenAccess(readOnly bool) string {
	if readOnly {
		return "read-only"
	}
	return "read and write"
}

func statusText(status int) string {
	if status == 0 {
		return "Error"
	}
	return fmt.Sprintf("Error %d", status)
}

// fieldSpec describes one labelled form input.
type fieldSpec struct {
	ID, Name, Label, Value, Type, Hint, Error string
	Required                                  bool
	// Max is the largest value of a number field.
	Max int
}

func (s fieldSpec) describedBy() string {
	if s.Error != "" {
		return s.ID + "-error " + s.ID + "-hint"
	}
	return s.ID + "-hint"
}

func intStr(v int) string { return strconv.Itoa(v) }

func uintStr(v uint) string {
	return strconv.FormatUint(uint64(v), 10)
}

// flavorGroup is one flavor on a team card: accelerators drawn as bars, the
// other resources (CPU, memory) summarised in a line.
type flavorGroup struct {
	Flavor string
	Bars   []FlavorQuota
	Others []FlavorQuota
}

func isAccelerator(resource string) bool {
	return strings.HasPrefix(resource, "nvidia.com/") || resource == "amd.com/gpu"
}

// granted reports whether the team has or may borrow any of the resource.
// Kueue needs every covered resource listed in every flavor, so zero rows
// are common and only noise on a card.
func granted(f FlavorQuota) bool {
	return f.Nominal != 0 || f.Used != 0 || f.Borrowed != 0 || f.BorrowingLimit != 0
}

// groupFlavors lists flavors with accelerators first, otherwise in order of
// first appearance, and drops resources the team has no quota for. A flavor
// without accelerators draws all its resources as bars.
func groupFlavors(fs []FlavorQuota) []flavorGroup {
	var groups []flavorGroup
	index := map[string]int{}
	for _, f := range fs {
		if !granted(f) {
			continue
		}
		i, ok := index[f.Flavor]
		if !ok {
			i = len(groups)
			index[f.Flavor] = i
			groups = append(groups, flavorGroup{Flavor: f.Flavor})
		}
		if isAccelerator(f.Resource) {
			groups[i].Bars = append(groups[i].Bars, f)
		} else {
			groups[i].Others = append(groups[i].Others, f)
		}
	}
	var gpu, other []flavorGroup
	for _, g := range groups {
		if len(g.Bars) > 0 {
			gpu = append(gpu, g)
			continue
		}
		g.Bars, g.Others = g.Others, nil
		other = append(other, g)
	}
	return append(gpu, other...)
}

// othersSummary reads like "also 12 of 128 CPUs, 64 GiB of 1 TiB memory in use".
func othersSummary(fs []FlavorQuota) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s of %s %s", formatAmount(f.Resource, f.Used), formatAmount(f.Resource, f.Nominal), resourceLabel(f.Resource)))
	}
	return "Also " + strings.Join(parts, ", ") + " in use."
}

func errorTitle(p ErrorProps) string {
	if p.Title != "" {
		return p.Title
	}
	return "Something went wrong"
}
