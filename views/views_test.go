package views

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(t.Context(), &buf))
	doc, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	assertCSPSafe(t, doc)
	return doc
}

// assertCSPSafe checks what the Content-Security-Policy would block.
func assertCSPSafe(t *testing.T, doc *goquery.Document) {
	t.Helper()
	assert.Zero(t, doc.Find("[style]").Length(), "inline style attribute")
	assert.Zero(t, doc.Find("style").Length(), "inline <style>")
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		_, hasSrc := s.Attr("src")
		assert.True(t, hasSrc, "inline <script>")
	})
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			assert.False(t, strings.HasPrefix(a.Key, "on"), "inline event handler %s", a.Key)
		}
	})
}

func byTestID(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(`[data-testid="` + id + `"]`)
}

func text(s *goquery.Selection) string {
	return strings.Join(strings.Fields(s.Text()), " ")
}

var (
	alice = &NavUser{Username: "alice", Name: "Alice Anders", Role: RoleResearcher, InTeam: true}
	bob   = &NavUser{Username: "bob", Name: "Bob Berg", Role: RoleLead, IsLead: true, InTeam: true}
	// erin is an admin in no team: she has no team page to be offered.
	erin = &NavUser{Username: "erin", Name: "Erin Eve", Role: RoleAdmin, IsAdmin: true}
)

func TestLayoutNavigationPerRole(t *testing.T) {
	researcher := []string{"nav-home", "nav-jobs", "nav-launch", "nav-quota-requests", "nav-team"}
	cases := map[string]struct {
		user      *NavUser
		pending   int
		wantNav   []string
		wantBadge string
	}{
		"anonymous sees no navigation": {user: nil, wantNav: nil},
		"researcher":                   {user: alice, pending: 4, wantNav: researcher},
		"team lead gets approvals with badge": {
			user: bob, pending: 3, wantBadge: "3 pending",
			wantNav: append(append([]string{}, researcher...), "nav-approvals"),
		},
		"lead with nothing to approve has no badge": {
			user: bob, wantNav: append(append([]string{}, researcher...), "nav-approvals"),
		},
		"admin gets administration pages": {
			user: erin, pending: 1, wantBadge: "1 pending",
			wantNav: append(append([]string{}, researcher[:len(researcher)-1]...), "nav-approvals",
				"nav-templates", "nav-teams", "nav-prices", "nav-idle", "nav-allowlist", "nav-audit", "nav-tokens", "nav-cluster", "nav-acceptance"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, ErrorPage(Nav{User: tc.user, PendingApprovals: tc.pending}, ErrorProps{Status: 404, Title: "Not found"}))
			var got []string
			doc.Find(`nav[aria-label="Main"] a`).Each(func(_ int, s *goquery.Selection) {
				id, _ := s.Attr("data-testid")
				got = append(got, id)
				href, _ := s.Attr("href")
				assert.NotEmpty(t, href, "%s has a target", id)
			})
			if diff := cmp.Diff(tc.wantNav, got); diff != "" {
				t.Errorf("nav items (-want +got):\n%s", diff)
			}
			assert.Equal(t, tc.wantBadge, text(byTestID(doc, "approvals-badge")))
		})
	}
}

func TestLayoutSignedIn(t *testing.T) {
	nav := Nav{
		User: bob, CSRFToken: "csrf-123", Active: "jobs",
		Flash: []Flash{{Kind: FlashSuccess, Text: "Token created."}, {Kind: "bogus", Text: "Heads up."}},
	}
	doc := render(t, Layout(nav, "Jobs"))

	assert.Equal(t, "Jobs · Gantry", doc.Find("title").Text())
	assert.Equal(t, "bob", text(byTestID(doc, "user-name")))
	assert.Equal(t, "team lead", text(byTestID(doc, "user-role")))

	logout := byTestID(doc, "logout")
	require.Equal(t, 1, logout.Length())
	form := logout.Closest("form")
	assert.Equal(t, "post", form.AttrOr("method", ""))
	assert.Equal(t, "/auth/logout", form.AttrOr("action", ""))
	assert.Equal(t, "csrf-123", form.Find(`input[type="hidden"][name="gorilla.csrf.Token"]`).AttrOr("value", ""))

	flashes := byTestID(doc, "flash")
	require.Equal(t, 2, flashes.Length())
	assert.Equal(t, "status", flashes.First().AttrOr("role", ""))
	assert.Equal(t, "Token created.", text(flashes.First()))
	assert.True(t, flashes.First().HasClass("flash-success"))
	assert.True(t, flashes.Last().HasClass("flash-info"), "unknown kinds fall back to info")

	assert.Equal(t, "page", byTestID(doc, "nav-jobs").AttrOr("aria-current", ""))
	assert.Zero(t, byTestID(doc, "nav-home").Filter("[aria-current]").Length())

	assert.Equal(t, "#main", doc.Find("a.skip-link").AttrOr("href", ""))
	assert.Equal(t, 1, doc.Find("main#main").Length())
	assert.Zero(t, byTestID(doc, "login").Length())
}

func TestErrorPageAnonymous(t *testing.T) {
	doc := render(t, ErrorPage(Nav{}, ErrorProps{
		Status: 400, Title: "Sign-in failed", Message: "The sign-in link expired. Please sign in again.", RequestID: "req-42",
	}))
	page := byTestID(doc, "error-page")
	require.Equal(t, 1, page.Length())
	assert.Equal(t, "Error 400", text(byTestID(doc, "error-status")))
	assert.Equal(t, "Sign-in failed", text(page.Find("h1")))
	assert.Equal(t, "The sign-in link expired. Please sign in again.", text(byTestID(doc, "error-message")))
	assert.Equal(t, "req-42", text(byTestID(doc, "request-id")))
	assert.Zero(t, byTestID(doc, "user-name").Length())
	assert.Zero(t, byTestID(doc, "logout").Length())
	assert.Equal(t, "/auth/login", byTestID(doc, "login").AttrOr("href", ""))
}

func TestErrorPageEscapesMessage(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, ErrorPage(Nav{}, ErrorProps{Status: 500, Title: "Oops", Message: `<script>alert(1)</script>`}).Render(t.Context(), &buf))
	assert.NotContains(t, buf.String(), "<script>alert(1)</script>")
	assert.Contains(t, buf.String(), "&lt;script&gt;")
}

func visionCard() TeamCard {
	return TeamCard{
		Name: "vision", DisplayName: "Computer Vision", Role: RoleLead,
		Namespace: "team-vision", ClusterQueue: "team-vision", LocalQueue: "default", CostCenter: "CC-1001",
		Pending: 2, Admitted: 5,
		Flavors: []FlavorQuota{
			{Flavor: "cpu-pool", Resource: "cpu", Nominal: 64, Used: 16},
			{Flavor: "h100", Resource: "nvidia.com/gpu", Nominal: 16, Used: 20, Borrowed: 4, BorrowingLimit: -1},
			{Flavor: "h100", Resource: "cpu", Nominal: 128, Used: 40, BorrowingLimit: -1},
			{Flavor: "h100", Resource: "memory", Nominal: 1 << 40, Used: 64 << 30, BorrowingLimit: -1},
			{Flavor: "a100", Resource: "nvidia.com/gpu", Nominal: 8, Used: 2, BorrowingLimit: 0},
			{Flavor: "a100", Resource: "nvidia.com/mig-1g.10gb", BorrowingLimit: 0},
			{Flavor: "cpu-pool", Resource: "nvidia.com/gpu", BorrowingLimit: 0},
			{Flavor: "unused", Resource: "nvidia.com/gpu", BorrowingLimit: 0},
		},
	}
}

func TestHomePage(t *testing.T) {
	nlp := TeamCard{Name: "nlp", Role: RoleResearcher, Namespace: "team-nlp", LocalQueue: "default",
		Flavors: []FlavorQuota{{Flavor: "h100", Resource: "nvidia.com/gpu"}}}
	doc := render(t, HomePage(Nav{User: bob, Active: "home"}, HomeProps{Teams: []TeamCard{visionCard(), nlp}}))

	vision := byTestID(doc, "team-vision")
	require.Equal(t, 1, vision.Length())
	assert.Equal(t, "Computer Vision", text(vision.Find("h2")))
	assert.Equal(t, "team lead", text(vision.Find(`[data-testid="team-role"]`)))
	assert.Equal(t, "team-vision", text(vision.Find(`[data-testid="team-namespace"]`)))
	assert.Equal(t, "default", text(vision.Find(`[data-testid="team-queue"]`)))
	assert.Equal(t, "2", text(vision.Find(`[data-testid="team-pending"]`)))
	assert.Equal(t, "5", text(vision.Find(`[data-testid="team-admitted"]`)))
	assert.Contains(t, text(vision), "CC-1001")

	h100 := vision.Find(`[data-testid="quota-h100-nvidia.com/gpu"]`)
	assert.Contains(t, text(h100), "GPUs 20 / 16")
	assert.Contains(t, text(h100), "4 borrowed from the cohort")
	assert.Contains(t, text(h100), "may borrow idle quota")
	bar := h100.Find("svg.bar")
	assert.Equal(t, "img", bar.AttrOr("role", ""))
	assert.Equal(t, "20 of 16 GPUs in use, 4 borrowed from the cohort", bar.AttrOr("aria-label", ""))
	assert.Equal(t, "80.00", bar.Find(".bar-nominal").AttrOr("width", ""))
	assert.Equal(t, "80.00", bar.Find(".bar-used").AttrOr("width", ""))
	assert.Equal(t, "80.00", bar.Find(".bar-borrowed").AttrOr("x", ""))
	assert.Equal(t, "20.00", bar.Find(".bar-borrowed").AttrOr("width", ""))

	a100 := vision.Find(`[data-testid="quota-a100-nvidia.com/gpu"]`)
	assert.Contains(t, text(a100), "cannot borrow")
	assert.Zero(t, a100.Find(".bar-borrowed").Length())
	assert.Equal(t, "25.00", a100.Find(".bar-used").AttrOr("width", ""))

	var flavors []string
	vision.Find(".flavor").Each(func(_ int, s *goquery.Selection) { flavors = append(flavors, text(s)) })
	assert.Equal(t, []string{"h100", "a100", "cpu-pool"}, flavors, "GPU flavors first")
	assert.Equal(t, "Also 40 of 128 CPUs, 64 GiB of 1 TiB memory in use.",
		text(vision.Find(`[data-testid="flavor-h100"] [data-testid="quota-others"]`)))
	assert.Zero(t, vision.Find(`[data-testid="quota-h100-cpu"]`).Length(), "CPU is not drawn as a bar beside GPUs")
	assert.Equal(t, 1, vision.Find(`[data-testid="quota-cpu-pool-cpu"] svg.bar`).Length(), "a CPU-only pool still gets a bar")
	assert.Zero(t, vision.Find(`[data-testid="quota-a100-nvidia.com/mig-1g.10gb"]`).Length(), "zero quota rows Kueue requires are hidden")
	assert.Zero(t, vision.Find(`[data-testid="quota-cpu-pool-nvidia.com/gpu"]`).Length())

	nlpCard := byTestID(doc, "team-nlp")
	assert.Equal(t, "nlp", text(nlpCard.Find("h2")), "falls back to the team name")
	assert.Equal(t, "researcher", text(nlpCard.Find(`[data-testid="team-role"]`)))
	assert.Contains(t, text(nlpCard), "no quota yet")

	assert.Zero(t, byTestID(doc, "cluster-error").Length())
	assert.Zero(t, byTestID(doc, "queue-inactive").Length())
	assert.Equal(t, "page", byTestID(doc, "nav-home").AttrOr("aria-current", ""))
}

func TestHomePageInactiveQueue(t *testing.T) {
	card := visionCard()
	card.QueueInactive = "references missing ResourceFlavor(s): h100"
	doc := render(t, HomePage(Nav{User: alice}, HomeProps{Teams: []TeamCard{card}}))
	assert.Equal(t, "This team's queue is not admitting jobs: references missing ResourceFlavor(s): h100",
		text(byTestID(doc, "team-vision").Find(`[data-testid="queue-inactive"]`)))
}

func TestHomePageClusterUnreadable(t *testing.T) {
	card := visionCard()
	card.Flavors = nil
	doc := render(t, HomePage(Nav{User: alice}, HomeProps{
		Teams: []TeamCard{card}, ClusterError: "The cluster could not be read just now.",
	}))
	notice := byTestID(doc, "cluster-error")
	require.Equal(t, 1, notice.Length())
	assert.Equal(t, "alert", notice.AttrOr("role", ""))
	assert.Contains(t, text(notice), "Queues and quota are unavailable")
	assert.Equal(t, "The cluster could not be read just now.", text(byTestID(doc, "cluster-error-message")))

	vision := byTestID(doc, "team-vision")
	assert.Equal(t, 1, vision.Length(), "teams still listed")
	assert.Contains(t, text(vision), "Quota not available")
	assert.Zero(t, vision.Find(`[data-testid="team-pending"]`).Length(), "no made-up zero counts")
}

func TestNoTeamPage(t *testing.T) {
	cases := map[string]struct {
		props       NoTeamProps
		wantGroups  []string
		wantContact string
	}{
		"groups and contact": {
			props:      NoTeamProps{Username: "frank", Groups: []string{"marketing", "all-staff"}, AdminContact: "#gpu-platform"},
			wantGroups: []string{"marketing", "all-staff"}, wantContact: "#gpu-platform",
		},
		"no groups, default contact": {
			props: NoTeamProps{Username: "frank"}, wantContact: "the Gantry admins",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := render(t, NoTeamPage(Nav{User: &NavUser{Username: "frank", Role: RoleResearcher}}, tc.props))
			page := byTestID(doc, "no-team")
			require.Equal(t, 1, page.Length())
			assert.Contains(t, text(page), "not in any team")
			assert.Contains(t, text(page), "frank")
			var groups []string
			byTestID(doc, "groups").Find("li").Each(func(_ int, s *goquery.Selection) { groups = append(groups, text(s)) })
			assert.Equal(t, tc.wantGroups, groups)
			if len(tc.wantGroups) == 0 {
				assert.Contains(t, text(byTestID(doc, "groups")), "no groups")
			}
			assert.Equal(t, tc.wantContact, text(byTestID(doc, "admin-contact")))
		})
	}
}

func TestProfilePage(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	used := now.Add(-time.Hour)
	props := ProfileProps{
		User: *alice, Email: "alice@example.com", Groups: []string{"vision-researchers"}, Now: now,
		Tokens: []APIToken{
			{ID: 1, Name: "ci-nightly", Prefix: "gnt_ab12", CreatedAt: now.Add(-48 * time.Hour), ExpiresAt: now.Add(24 * time.Hour), LastUsedAt: &used},
			{ID: 2, Name: "old", Prefix: "gnt_cd34", CreatedAt: now.Add(-96 * time.Hour), ExpiresAt: now.Add(24 * time.Hour), Revoked: true},
			{ID: 3, Name: "lapsed", Prefix: "gnt_ef56", CreatedAt: now.Add(-96 * time.Hour), ExpiresAt: now.Add(-time.Hour)},
		},
		Form: TokenForm{
			Name: "my <script>", ExpiresInDays: "900",
			Errors: map[string]string{FieldTokenExpiresIn: "Choose between 1 and 365 days."},
		},
	}
	doc := render(t, ProfilePage(Nav{User: alice, CSRFToken: "tok-csrf", Active: "profile"}, props))

	assert.Equal(t, "alice@example.com", text(byTestID(doc, "profile-email")))
	assert.Equal(t, "vision-researchers", text(byTestID(doc, "profile-groups")))
	assert.Zero(t, byTestID(doc, "new-token").Length(), "no token shown unless just created")

	t.Run("token list", func(t *testing.T) {
		cases := map[string]struct {
			id, state  string
			revokeable bool
		}{
			"active":  {id: "1", state: "active", revokeable: true},
			"revoked": {id: "2", state: "revoked"},
			"expired": {id: "3", state: "expired"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				row := byTestID(doc, "token-"+tc.id)
				require.Equal(t, 1, row.Length())
				assert.Equal(t, tc.state, row.AttrOr("data-state", ""))
				btn := row.Find(`[data-testid="revoke-` + tc.id + `"]`)
				if !tc.revokeable {
					assert.Zero(t, btn.Length())
					return
				}
				form := btn.Closest("form")
				assert.Equal(t, "post", form.AttrOr("method", ""))
				assert.Equal(t, "/profile/tokens/"+tc.id+"/revoke", form.AttrOr("action", ""))
				assert.Equal(t, "tok-csrf", form.Find(`input[name="gorilla.csrf.Token"]`).AttrOr("value", ""))
			})
		}
		row := byTestID(doc, "token-1")
		assert.Contains(t, text(row), "gnt_ab12")
		assert.Contains(t, text(row), "2026-11-29 11:00 UTC")
	})

	t.Run("form keeps typed values and shows errors inline", func(t *testing.T) {
		form := byTestID(doc, "token-form")
		assert.Equal(t, "/profile/tokens", form.AttrOr("action", ""))
		assert.Equal(t, "post", form.AttrOr("method", ""))
		assert.Equal(t, "tok-csrf", form.Find(`input[name="gorilla.csrf.Token"]`).AttrOr("value", ""))

		name := byTestID(doc, "input-name")
		assert.Equal(t, "my <script>", name.AttrOr("value", ""))
		_, invalid := name.Attr("aria-invalid")
		assert.False(t, invalid)
		assert.Zero(t, byTestID(doc, "error-name").Length())

		exp := byTestID(doc, "input-expires_in_days")
		assert.Equal(t, "900", exp.AttrOr("value", ""))
		assert.Equal(t, "true", exp.AttrOr("aria-invalid", ""))
		assert.Equal(t, "Choose between 1 and 365 days.", text(byTestID(doc, "error-expires_in_days")))
		assert.Contains(t, exp.AttrOr("aria-describedby", ""), "token-expires-error")
		assert.Equal(t, "Expires in (days)", text(doc.Find(`label[for="token-expires"]`)))
	})
}

func TestProfilePageShowsNewTokenOnce(t *testing.T) {
	doc := render(t, ProfilePage(Nav{User: alice}, ProfileProps{User: *alice, NewToken: "gnt_secret_value"}))
	tok := byTestID(doc, "new-token")
	require.Equal(t, 1, tok.Length())
	assert.Equal(t, "gnt_secret_value", tok.AttrOr("value", ""))
	_, readonly := tok.Attr("readonly")
	assert.True(t, readonly)
	assert.Contains(t, text(byTestID(doc, "new-token-panel")), "will not be shown again")
	assert.Equal(t, 1, byTestID(doc, "no-tokens").Length())
}

func TestQuotaBar(t *testing.T) {
	cases := map[string]struct {
		f    FlavorQuota
		want bar
	}{
		"empty quota":          {f: FlavorQuota{}, want: bar{}},
		"half used":            {f: FlavorQuota{Nominal: 8, Used: 4}, want: bar{Nominal: 100, Used: 50, BorrowedX: 50}},
		"borrowing beyond own": {f: FlavorQuota{Nominal: 8, Used: 16, Borrowed: 8}, want: bar{Nominal: 50, Used: 50, Borrowed: 50, BorrowedX: 50}},
		"no nominal, borrowed": {f: FlavorQuota{Nominal: 0, Used: 2, Borrowed: 2}, want: bar{Borrowed: 100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, quotaBar(tc.f))
		})
	}
}

func TestFormatAmount(t *testing.T) {
	cases := map[string]struct {
		resource string
		v        int64
		want     string
	}{
		"gpus":         {resource: "nvidia.com/gpu", v: 16, want: "16"},
		"memory TiB":   {resource: "memory", v: 1 << 40, want: "1 TiB"},
		"memory mixed": {resource: "memory", v: 1536 << 20, want: "1.5 GiB"},
		"small":        {resource: "memory", v: 512, want: "512 B"},
		"zero memory":  {resource: "memory", v: 0, want: "0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, formatAmount(tc.resource, tc.v))
		})
	}
	assert.Equal(t, "MIG 1g.10gb slices", resourceLabel("nvidia.com/mig-1g.10gb"))
}
