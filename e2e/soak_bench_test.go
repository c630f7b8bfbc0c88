package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/launch"
)

// The soak run of issue 17: soakSessions people, each signed in through
// the IdP with a session of their own (soak-001… in the three load teams;
// every soakAdminEvery-th also an admin), browse for GANTRY_SOAK_MINUTES
// (default 10): the jobs list, job pages, their team's page, the cluster
// page (admins), with a pause of soakThinkMin–soakThinkMax between clicks,
// and about one click in a hundred is a launch. The cluster is at a steady
// size, as a production one is: each person has one job of their own from
// the start, and a launch replaces it (the old one is deleted through the
// API first, as a researcher starts a new run instead of the last one). The
// portal's RSS is read every minute; growth is measured from minute 2
// (caches warm) to the end, so it shows what the portal keeps, not what
// the cluster gained.
const (
	soakSessions   = 200
	soakAdminEvery = 20
	soakThinkMin   = 2 * time.Second
	soakThinkMax   = 6 * time.Second
	soakLaunchOdds = 0.01
	soakAdminGroup = "gantry-admins"
)

// soakSession is one signed-in person.
type soakSession struct {
	client *http.Client
	csrf   string
	team   *loadTeam
	admin  bool
	own    []string // the person's jobs (guarded by the soak's jobsMu)
}

// send makes a request as s, with its CSRF token (and JSON when there is a
// body); the caller closes the answer's body.
func (s *soakSession) send(ctx context.Context, method, u string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(csrfHeader, s.csrf)
	return s.client.Do(req)
}

// drained reads and closes an answer's body and returns its status.
func drained(resp *http.Response) int {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkSoak is `make bench`'s soak run: BENCH soak sessions=200
// minutes=10 errors_5xx=… rss_mib_min2=… rss_mib_end=… rss_growth_pct=….
func BenchmarkSoak(b *testing.B) {
	minutes := loadSize(b, "GANTRY_SOAK_MINUTES", 10)
	// GANTRY_SOAK_LAUNCHES=0 browses without launching: what RSS does
	// when nothing changes in the cluster.
	launchOdds := soakLaunchOdds * float64(loadSize(b, "GANTRY_SOAK_LAUNCHES", 1))
	env := stacktest.Stack(b)
	settled(b, env)
	var accounts []stacktest.IdPUser
	for i := range soakSessions {
		name := fmt.Sprintf("soak-%03d", i+1)
		groups := []string{fmt.Sprintf("load%d-researchers", i%loadTeams+1)}
		if i%soakAdminEvery == 0 {
			groups = append(groups, soakAdminGroup)
		}
		accounts = append(accounts, stacktest.IdPUser{Username: name, Name: "Soak " + name, Email: name + "@gantry.local", Groups: groups})
	}
	issuer := stacktest.FreshIdP(b, accounts...)
	teams, seedTeams := benchTeams(b, env)
	debug, debugURL := debugListen(b)
	profiles := profileDir(b, env)
	portal := StartPortal(b, seedTeams, WithEnv("GANTRY_LOG_LEVEL", "warn"), WithEnv("GANTRY_OIDC_ISSUER", issuer),
		WithEnv("GANTRY_SEED_TEMPLATES", filepath.Join(env.Layout.Root, "deploy", "templates")), debug)

	start := time.Now()
	sessions := make([]*soakSession, soakSessions)
	for i, a := range accounts {
		c := signIn(b, portal, a.Username)
		sessions[i] = &soakSession{client: c, csrf: profileCSRF(b, c, portal), team: teams[i%loadTeams], admin: i%soakAdminEvery == 0}
	}
	b.Logf("%d sessions signed in through the IdP in %s", len(sessions), time.Since(start).Round(time.Second))

	var jobsMu sync.Mutex
	jobsOf := map[string][]string{}
	var launches, deletes atomic.Int64
	launchAs := func(ctx context.Context, s *soakSession) (int, error) {
		resp, err := s.send(ctx, http.MethodPost, portal.URL+"/api/v1/teams/"+s.team.Name+"/jobs",
			strings.NewReader(launchBenchBody(launch.NewLaunchID())))
		if err != nil {
			return 0, err
		}
		var job struct{ Name string }
		if resp.StatusCode == http.StatusCreated && json.NewDecoder(resp.Body).Decode(&job) == nil {
			launches.Add(1)
			jobsMu.Lock()
			jobsOf[s.team.Name] = append(jobsOf[s.team.Name], job.Name)
			s.own = append(s.own, job.Name)
			jobsMu.Unlock()
		}
		return drained(resp), nil
	}
	// replaceAs deletes s's oldest job, if any, then launches a new one.
	replaceAs := func(ctx context.Context, s *soakSession) (int, error) {
		jobsMu.Lock()
		var old string
		if len(s.own) > 0 {
			old, s.own = s.own[0], s.own[1:]
			names := jobsOf[s.team.Name]
			if i := slices.Index(names, old); i >= 0 {
				jobsOf[s.team.Name] = slices.Delete(slices.Clone(names), i, i+1)
			}
		}
		jobsMu.Unlock()
		if old != "" {
			resp, err := s.send(ctx, http.MethodDelete, portal.URL+"/api/v1/teams/"+s.team.Name+"/jobs/"+old, nil)
			if err != nil {
				return 0, err
			}
			if status := drained(resp); status != http.StatusNoContent {
				return status, nil
			}
			deletes.Add(1)
		}
		return launchAs(ctx, s)
	}
	start = time.Now()
	parallel(b, len(sessions), func(ctx context.Context, i int) error {
		status, err := launchAs(ctx, sessions[i])
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("first launch of session %d: status %d", i, status)
		}
		return err
	})
	b.Logf("each of the %d sessions launched its first job in %s", len(sessions), time.Since(start).Round(time.Second))
	seeded := launches.Load()

	// click is one page view (or launch) of s; it returns the status.
	click := func(ctx context.Context, s *soakSession) (int, error) {
		r := rand.Float64()
		var path string
		switch {
		case r < launchOdds:
			return replaceAs(ctx, s)
		case r < 0.35:
			path = "/jobs"
			if rand.IntN(2) == 0 {
				path += "?team=" + s.team.Name
			}
		case r < 0.65:
			jobsMu.Lock()
			names := jobsOf[s.team.Name]
			path = "/teams/" + s.team.Name + "/jobs/" + names[rand.IntN(len(names))]
			jobsMu.Unlock()
		case r < 0.85 || !s.admin:
			path = "/teams/" + s.team.Name
		default:
			path = "/admin/cluster"
		}
		resp, err := s.send(ctx, http.MethodGet, portal.URL+path, nil)
		if err != nil {
			return 0, err
		}
		return drained(resp), nil
	}

	pid := portal.proc.cmd.Process.Pid
	for range b.N {
		ctx, cancel := context.WithTimeout(b.Context(), time.Duration(minutes)*time.Minute)
		var clicks, errors5xx, otherErrors atomic.Int64
		var firstMu sync.Mutex
		var firsts []string
		note := func(what string) {
			firstMu.Lock()
			defer firstMu.Unlock()
			if len(firsts) < 10 {
				firsts = append(firsts, what)
			}
		}
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() {
				for {
					if !pause(ctx, soakThinkMin+rand.N(soakThinkMax-soakThinkMin)) {
						return
					}
					status, err := click(ctx, s)
					if ctx.Err() != nil {
						return // the soak ended during this click
					}
					clicks.Add(1)
					switch {
					case err != nil:
						otherErrors.Add(1)
						note(err.Error())
					case status >= 500:
						errors5xx.Add(1)
						note(fmt.Sprintf("status %d", status))
					case status >= 300:
						otherErrors.Add(1)
						note(fmt.Sprintf("status %d", status))
					}
				}
			})
		}
		rss := make([]int64, 0, minutes)
		anon := make([]int64, 0, minutes)
		// The live heap at minute 2 and at the end, with their profiles:
		// go tool pprof -base soak-heap-min2.pprof soak-heap-end.pprof
		// shows what grew.
		var live2, liveEnd float64
		tick := time.NewTicker(time.Minute)
		for m := 1; m <= minutes; m++ {
			<-tick.C
			rss = append(rss, procRSS(b, pid))
			anon = append(anon, procStatusKB(b, pid, "RssAnon")<<10)
			fmt.Printf("soak minute %d: rss_mib=%d rss_anon_mib=%d clicks=%d errors_5xx=%d other_errors=%d\n", m, rss[m-1]>>20, anon[m-1]>>20,
				clicks.Load(), errors5xx.Load(), otherErrors.Load())
			if m == min(2, minutes) {
				live2 = liveHeap(b, portal, debugURL, filepath.Join(profiles, "soak-heap-min2.pprof"))
			}
			if m == minutes { // also minute 2 of a 2-minute soak
				liveEnd = liveHeap(b, portal, debugURL, filepath.Join(profiles, "soak-heap-end.pprof"))
			}
		}
		tick.Stop()
		cancel()
		wg.Wait()
		for _, f := range firsts {
			fmt.Printf("soak error: %s\n", f)
		}
		at2 := min(2, len(rss)) - 1
		min2, end := rss[at2], rss[len(rss)-1]
		anon2, anonEnd := anon[at2], anon[len(anon)-1]
		// RSS counts the executable's pages as the portal first runs them;
		// anonymous RSS is the heap, stacks and runtime: what a leak grows.
		fmt.Printf("BENCH soak sessions=%d minutes=%d errors_5xx=%d rss_mib_min2=%d rss_mib_end=%d rss_growth_pct=%.1f rss_anon_mib_min2=%d rss_anon_mib_end=%d rss_anon_growth_pct=%.1f live_heap_mib_min2=%.1f live_heap_mib_end=%.1f clicks=%d launches=%d deletes=%d jobs=%d other_errors=%d\n",
			len(sessions), minutes, errors5xx.Load(), min2>>20, end>>20, 100*float64(end-min2)/float64(min2),
			anon2>>20, anonEnd>>20, 100*float64(anonEnd-anon2)/float64(anon2), live2/(1<<20), liveEnd/(1<<20), clicks.Load(), launches.Load()-seeded, deletes.Load(), launches.Load()-deletes.Load(), otherErrors.Load())
		require.Zero(b, errors5xx.Load(), "5xx answers during the soak")
	}
}

// procStatusKB is one "Name:   N kB" field of /proc/<pid>/status, in kB.
func procStatusKB(b *testing.B, pid int, name string) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(b, err)
			return kb
		}
	}
	b.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
