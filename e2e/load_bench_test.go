package e2e

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/devcluster"
	"github.com/gantry-dev/gantry/internal/devcluster/stacktest"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/naming"
	"github.com/gantry-dev/gantry/internal/roster"
	"github.com/gantry-dev/gantry/internal/servertiming"
	"github.com/gantry-dev/gantry/internal/store"
)

// The load run of issue 17: a production-like cluster (by default 10,000
// workloads in three teams, a tenth of them admitted and running on 1,000
// simulated nodes, 10,000 ended runs in the ledger) and 50 users, each
// signed in with a session of their own through the IdP (the load users of
// deploy/local/idp/users.json), plus 5 admins for the cluster page. Sizes
// come from GANTRY_LOAD_WORKLOADS, GANTRY_LOAD_RUNNING and GANTRY_LOAD_NODES.
const (
	loadUsers    = 50
	loadAdmins   = 5
	loadTeams    = 3
	loadRequests = 2_000 // per page and user model
	// loadThink is how long a user reads a page before the next click, on
	// average (each pause is drawn evenly from half to one and a half of it).
	loadThink       = time.Second
	loadWorkers     = 16               // parallel creates against the API server
	loadCreateLimit = 30 * time.Minute // making 10,000 objects (see createLimit)
	loadPageLimit   = 10 * time.Minute
	// loadSettleLimit bounds the wait for an earlier run's cleanup.
	loadSettleLimit = 45 * time.Minute
	// loadQuietPct is how busy the machine may be before pages are measured.
	loadQuietPct    = 60
	loadRequestTime = time.Minute
	// The running workloads each hold one H100 on the added nodes, whose
	// DCGM series Prometheus scrapes every 15 s (devcluster.WriteDCGMTargets).
	loadPool      = "h100-sxm-ib-training"
	loadLiveLists = 5
	loadRunBatch  = 100
	loadGPU       = corev1.ResourceName("nvidia.com/gpu")
)

func loadSize(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "%s", name)
		return n
	}
	return def
}

// loadTeam is one of the load run's teams: its members sign in as
// load-NN (NN-1 mod 3 picks the team) through group load<i>-researchers.
type loadTeam struct {
	devcluster.Team
	group string
	jobs  []string
}

// BenchmarkLoad is `make bench`'s load run; `go test` alone never starts it.
// It prints one BENCH line per figure (see the reporting rules).
func BenchmarkLoad(b *testing.B) {
	workloads := loadSize(b, "GANTRY_LOAD_WORKLOADS", 10_000)
	running := loadSize(b, "GANTRY_LOAD_RUNNING", workloads/10)
	nodes := loadSize(b, "GANTRY_LOAD_NODES", 1_000)
	env := stacktest.Stack(b)
	requireAPIServerProfiles(b, env)
	settled(b, env)
	issuer := stacktest.FreshIdP(b) // the load users are seeded in the working tree's users.json

	teams := make([]*loadTeam, loadTeams)
	for i := range teams {
		group := fmt.Sprintf("load%d-researchers", i+1)
		quota := corev1.ResourceList{"cpu": resource.MustParse(strconv.Itoa(running + 10)), "memory": resource.MustParse(strconv.Itoa(running+10) + "Gi"),
			loadGPU: resource.MustParse(strconv.Itoa(running + 10))}
		t := env.Team(b, stacktest.TeamSpec{MemberGroups: []string{group}, LeadGroups: []string{fmt.Sprintf("load%d-leads", i+1)},
			Quotas: map[string]corev1.ResourceList{loadPool: quota}})
		teams[i] = &loadTeam{Team: t, group: group}
	}

	start := time.Now()
	addNodes(b, env, nodes)
	b.Logf("added %d simulated nodes in %s", nodes, time.Since(start).Round(time.Second))
	start = time.Now()
	populate(b, env, teams, workloads, running)
	b.Logf("created %d Jobs and Workloads (%d admitted and running) in %s", workloads, running, time.Since(start).Round(time.Second))
	start = time.Now()
	series := waitDCGMSeries(b, env, teams, running)
	b.Logf("Prometheus holds %d DCGM utilization series of the load teams' pods after %s", series, time.Since(start).Round(time.Second))

	dsn := stacktest.Postgres(b)
	logSlowStatements(b, dsn)
	db, err := store.Open(b.Context(), dsn)
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	require.NoError(b, store.Migrate(b.Context(), db.SQL(), slog.New(slog.DiscardHandler)))
	var rows []roster.Team
	for _, t := range teams {
		rows = append(rows, roster.Team{Name: t.Name, DisplayName: "Load " + t.Name, MemberGroups: store.StringList{t.group},
			LeadGroups: store.StringList(t.LeadGroups)})
	}
	require.NoError(b, db.UpsertTeams(b.Context(), rows))
	start = time.Now()
	recordLoad(b, db, teams, workloads)
	b.Logf("recorded %d launches and %d ended runs in %s", workloads, workloads, time.Since(start).Round(time.Second))

	debug, debugURL := debugListen(b)
	// The portal runs as in a container with a 200 MiB memory limit, the
	// RSS target. The cgroup charges the binary's resident pages beside
	// what the runtime allocates, so the collector keeps the runtime's
	// memory under GOMEMLIMIT = the limit less those pages (about 60 MiB
	// before 48d28fc), less 10 MiB of slack. The portal itself would set
	// 200 less its 45 MiB mapped now; 130 is kept, the tighter bound, so
	// that runs compare.
	memLimit := loadSize(b, "GANTRY_LOAD_GOMEMLIMIT_MIB", 130)
	// The idle reclaim looks at a job once it has run for its window: at
	// the default hour, none of the running jobs here by the time the
	// pages are measured, while most of a production cluster's are. The
	// shortest window an admin may set (10 minutes) has the reclaim's
	// passes over every running job run beside the pages.
	portal := StartPortal(b, WithDatabase(dsn), WithEnv("GANTRY_LOG_LEVEL", "warn"), WithEnv("GANTRY_OIDC_ISSUER", issuer),
		debug, WithEnv("GOMEMLIMIT", fmt.Sprintf("%dMiB", memLimit)), WithEnv("GANTRY_IDLE_WINDOW", "10m"))
	profiles := profileDir(b, env)
	users, _ := signInAll(b, portal) // for the cache check below; everyone signs in again after the wait

	// The caches hold every object once each team's job list counts all of its jobs.
	for i, t := range teams {
		want := len(t.jobs)
		require.Eventually(b, func() bool {
			body, status := get(users[i], portal.URL+"/jobs")
			return status == http.StatusOK && strings.Contains(body, fmt.Sprintf(`data-testid="jobs-count">%d<`, want))
		}, 10*time.Minute, time.Second, "the job list of %s counts all %d jobs", t.Name, want)
	}
	background, settled := quiet(b, env, workloads)
	// The users come to the portal now, each signing in afresh: the wait
	// can outlast the session idle timeout (30 minutes; the 50,000 run's
	// wait took 75, and every session it had was over by its first view).
	users, admins := signInAll(b, portal)
	// GANTRY_LOAD_NICE (e.g. -10) measures each page a third time, right
	// after the first, with the portal, its PostgreSQL and the load
	// generator (the users' browsers) given CPU precedence over the
	// simulated cluster, as a CPU request gives a pod over best-effort
	// neighbours: the two lines of one run tell how much of the tail is
	// waiting for a core behind the cluster.
	type model struct {
		think time.Duration
		nice  int
	}
	models := []model{{loadThink, 0}, {0, 0}}
	if nice := loadSize(b, "GANTRY_LOAD_NICE", 0); nice != 0 {
		// Raising a priority takes root (or CAP_SYS_NICE); without it the
		// run measures without precedence and says so.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice); err != nil {
			b.Logf("GANTRY_LOAD_NICE=%d: not measured with precedence: %v", nice, err)
		} else {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 0)
			models = slices.Insert(models, 1, model{loadThink, nice})
		}
	}
	// Only the precedence phase renices anything (PostgreSQL's processes
	// are another user's), and puts every nice value back after it.

	teamOf := func(user int) *loadTeam { return teams[user%loadTeams] }
	pages := []struct {
		path    string
		clients []*http.Client
		url     func(user, i int) string
	}{
		{"/jobs", users, func(user, i int) string {
			q := url.Values{"page": {strconv.Itoa(1 + rand.IntN(max(1, len(teamOf(user).jobs)/50)))}}
			switch i % 3 {
			case 1:
				q.Set("team", teamOf(user).Name)
			case 2:
				q.Set("kind", string(catalog.KindTraining))
			}
			return "/jobs?" + q.Encode()
		}},
		{"/teams/{team}/jobs/{name}", users, func(user, _ int) string {
			t := teamOf(user)
			return "/teams/" + t.Name + "/jobs/" + t.jobs[rand.IntN(len(t.jobs))]
		}},
		{"/teams/{team}", users, func(user, _ int) string { return "/teams/" + teamOf(user).Name }},
		{"/admin/cluster", admins, func(int, int) string { return "/admin/cluster" }},
	}
	for range b.N {
		for _, p := range pages {
			live := liveList(b, env, teams[0])
			// The API server's request counters, read outside the views
			// measured: before the warm-up, then after each phase.
			reqs, reqsAt := apiserverRequests(b.Context(), env, true), time.Now()
			warmUp(b, p.clients, portal.URL, p.url)
			// Each page twice: users who read what they get before the next
			// click (loadThink), the figure the targets are about; then
			// users who click again the moment a page arrives, the most the
			// portal serves at once on this machine.
			for _, m := range models {
				think := m.think
				if m.nice != 0 {
					portalPrecedence(b, portal, m.nice)
				}
				suffix := fmt.Sprintf("think%d", think.Milliseconds())
				if m.nice != 0 {
					suffix += fmt.Sprintf("-nice%d", m.nice)
				}
				gc0 := metricValue(b, portal.URL+"/metrics", "go_gc_duration_seconds_count")
				panels0 := gpuPanels(b, portal.URL+"/metrics")
				pool0 := dbPool(b, portal.URL+"/metrics")
				// The portal's CPU profile and the API server's, each in
				// back-to-back windows through the whole load: what each did
				// in the seconds of the slowest views.
				stopPortal := portalWindows(b.Context(), debugURL, portal.proc.cmd.Process.Pid, profiles, pageFile(p.path)+"-"+suffix)
				// An execution trace of the same seconds tells where a slow
				// view's time went: running, waiting for a core (the OS's or
				// Go's), the collector, a lock, Postgres or Prometheus.
				trace := profileDuring(b, debugURL+"/debug/pprof/trace?seconds=5", filepath.Join(profiles, fmt.Sprintf("trace-%s-%s.out", pageFile(p.path), suffix)))
				stopAPIServer := apiServerWindows(b.Context(), env, profiles, pageFile(p.path)+"-"+suffix)
				cpu0 := procCPU(b, portal.proc.cmd.Process.Pid)
				busy0, all0 := machineCPU(b)
				t0 := time.Now()
				stopSampling := sampleCPU(b.Context())
				// Meanwhile every user has a job page open in another tab,
				// whose status refreshes itself every 3 s.
				stopPolls := pollOpenJobs(b.Context(), users, portal.URL, func(user int) string {
					t := teamOf(user)
					return "/teams/" + t.Name + "/jobs/" + t.jobs[rand.IntN(len(t.jobs))] + "/status"
				}, loadPollEvery)
				lat, timings, failed := load(b, p.clients, portal.URL, p.url, think)
				took := time.Since(t0)
				pollLat, pollTimings, pollsFailed := stopPolls()
				samples := stopSampling()
				perView := (procCPU(b, portal.proc.cmd.Process.Pid) - cpu0) / time.Duration(len(lat))
				busy1, all1 := machineCPU(b)
				busy := 100 * float64(busy1-busy0) / float64(all1-all0)
				reqsAfter, reqsAfterAt := apiserverRequests(b.Context(), env, true), time.Now()
				apiServerRequests := apiServerPhase(reqs, reqsAfter, reqsAfterAt.Sub(reqsAt))
				reqs, reqsAt = reqsAfter, reqsAfterAt
				trace()
				gcs := metricValue(b, portal.URL+"/metrics", "go_gc_duration_seconds_count") - gc0
				// Running jobs' panels whose GPU figures were of a moment ago
				// (newer ones read meanwhile), came without their chart, or
				// Prometheus had not answered within the page's wait (each
				// shown on the next refresh).
				counters := ""
				if p := gpuPanels(b, portal.URL+"/metrics").minus(panels0); p.total() > 0 {
					counters = fmt.Sprintf(" gpu_panels=%.0f gpu_earlier=%.0f gpu_chart_pending=%.0f gpu_pending=%.0f", p.total(), p.earlier, p.chartPending, p.pending)
				}
				// Connections to PostgreSQL the portal opened in the phase,
				// statements it prepared on them, and views that waited for
				// one: each costs the view it happens in.
				if pool := dbPool(b, portal.URL+"/metrics").minus(pool0); pool != (poolFigures{}) {
					counters += fmt.Sprintf(" db_connects=%.0f db_prepares=%.0f db_waits=%.0f", pool.connects, pool.prepares, pool.waits)
				}
				if m.nice != 0 {
					portalPrecedence(b, portal, 0)
				}
				require.Zero(b, failed, "%s: requests that did not answer 200", p.path)
				require.Zero(b, pollsFailed, "%s: status refreshes of open job pages that did not answer 200", p.path)
				require.NotEmpty(b, pollLat, "%s: status refreshes of open job pages", p.path)
				p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
				// When the slowest views were asked for, to match them with
				// the statements PostgreSQL logged as slow and the stack's logs.
				fmt.Printf("TAIL page=%s think_ms=%d nice=%d from=%s to=%s slowest=%s\n", p.path, think.Milliseconds(), m.nice,
					t0.UTC().Format(tailClock), time.Now().UTC().Format(tailClock), slowestViews(lat, timings))
				// What ran while the slowest views waited.
				for _, stall := range stalls(samples, lat, timings, 3) {
					fmt.Printf("STALL page=%s think_ms=%d nice=%d %s\n", p.path, think.Milliseconds(), m.nice, stall)
				}
				portalLines, err := stopPortal()
				require.NoError(b, err)
				for _, w := range portalLines {
					fmt.Printf("PORTAL page=%s think_ms=%d nice=%d %s\n", p.path, think.Milliseconds(), m.nice, w)
				}
				apiServerLines, err := stopAPIServer()
				require.NoError(b, err)
				for _, w := range apiServerLines {
					fmt.Printf("APISERVER page=%s think_ms=%d nice=%d %s\n", p.path, think.Milliseconds(), m.nice, w)
				}
				fmt.Printf("APISERVER page=%s think_ms=%d nice=%d phase to=%s %s\n", p.path, think.Milliseconds(), m.nice,
					reqsAt.UTC().Format(tailClock), apiServerRequests)
				// machine_busy_pct is how busy every core was (the stack, the
				// load generator and the portal): a p99 taken on a saturated
				// machine measures the queue for a core as much as the page.
				// view_p99_ms is the p99 of the views' time in the portal
				// alone (their Server-Timing trailers): the rest of what
				// users waited was spent outside it, in the kernel and the
				// load generator, both on the same two cores.
				fmt.Printf("BENCH page=%s workloads=%d users=%d think_ms=%d p50_ms=%.1f p99_ms=%.1f view_p99_ms=%.1f live_list_ms=%.0f ratio=%.1f rps=%.0f sessions=%d cpu_ms_per_view=%.2f machine_busy_pct=%.0f nice=%d gc_per_s=%.2f%s %s\n",
					p.path, workloads, loadUsers, think.Milliseconds(), ms(p50), ms(p99), ms(quantile(viewTimes(timings), 0.99)), ms(live), ms(live)/ms(p99), float64(len(lat))/took.Seconds(), len(p.clients), ms(perView), busy, m.nice,
					gcs/took.Seconds(), counters, tailTimings(lat, timings))
				// The open job pages' status refreshes during the phase.
				fmt.Printf("BENCH poll=/teams/{team}/jobs/{name}/status during=%s workloads=%d open_pages=%d every_ms=%d think_ms=%d polls=%d p50_ms=%.1f p99_ms=%.1f view_p99_ms=%.1f nice=%d %s\n",
					p.path, workloads, len(users), loadPollEvery.Milliseconds(), think.Milliseconds(), len(pollLat), ms(quantile(pollLat, 0.50)), ms(quantile(pollLat, 0.99)),
					ms(quantile(viewTimes(pollTimings), 0.99)), m.nice, tailTimings(pollLat, pollTimings))
				b.Logf("%s: %d requests, %d users thinking %s: p50 %s, p99 %s, max %s; live list of %s's workloads %s", p.path, len(lat), loadUsers, think,
					p50.Round(time.Microsecond), p99.Round(time.Microsecond), slices.Max(lat).Round(time.Microsecond), teams[0].Name, live.Round(time.Millisecond))
			}
		}
	}
	rss := procRSS(b, portal.proc.cmd.Process.Pid)
	// RSS counts the binary's mapped code and data (file pages) beside
	// what the portal allocated (anonymous pages).
	rssFile := procStatusKB(b, portal.proc.cmd.Process.Pid, "RssFile") << 10
	rssPeak := procStatusKB(b, portal.proc.cmd.Process.Pid, "VmHWM") << 10
	heap := metricValue(b, portal.URL+"/metrics", "go_memstats_heap_inuse_bytes")
	// Where the anonymous pages beyond the heap in use went: free heap
	// pages the runtime has not returned yet, goroutine stacks, and the
	// runtime's own books (spans, the collector's bitmaps, profiling).
	mem := func(name string) float64 {
		return metricValue(b, portal.URL+"/metrics", "go_memstats_"+name+"_bytes") / (1 << 20)
	}
	heapFree := mem("heap_idle") - mem("heap_released")
	stacks := mem("stack_sys")
	books := mem("mspan_sys") + mem("mcache_sys") + mem("buck_hash_sys") + mem("gc_sys") + mem("other_sys")
	nextGC := mem("next_gc")
	// The collector's pace: the portal's own (cmd/gantry, paceCollector)
	// unless GOGC is set.
	gogc := metricValue(b, portal.URL+"/metrics", "go_gc_gogc_percent")
	live := liveHeap(b, portal, debugURL, filepath.Join(profiles, "heap.pprof"))
	b.Logf("CPU profiles of each page's load and the heap profile at the end are in %s (go tool pprof)", profiles)
	fmt.Printf("BENCH rss workloads=%d nodes=%d rss_mib=%d rss_file_mib=%d heap_inuse_mib=%.0f live_heap_mib=%.0f gomemlimit_mib=%d rss_peak_mib=%d heap_free_mib=%.0f stacks_mib=%.0f runtime_mib=%.0f next_gc_mib=%.0f gogc=%.0f\n", workloads, nodes,
		rss>>20, rssFile>>20, heap/(1<<20), live/(1<<20), memLimit, rssPeak>>20, heapFree, stacks, books, nextGC, gogc)
	// The API server's memory sets how long each of its collections
	// keeps a core (or both) busy beside the portal.
	apiServerRSS := apiServerHeap(b, env, filepath.Join(profiles, "apiserver-heap.pprof"))
	fmt.Printf("BENCH load-cluster workloads=%d running=%d nodes=%d dcgm_series=%d ledger_rows=%d users=%d admins=%d background_busy_pct=%.0f settled=%t apiserver_rss_mib=%d\n", workloads, running, nodes,
		series, workloads, loadUsers, loadAdmins, background, settled, apiServerRSS>>20)
}

// processesNamed are the PIDs of the processes whose command is name.
func processesNamed(b *testing.B, name string) []int {
	b.Helper()
	procs, err := processCPU()
	require.NoError(b, err)
	var out []int
	for pid, p := range procs {
		if p.name == name {
			out = append(out, pid)
		}
	}
	return out
}

// portalPrecedence sets the nice value of the portal, its PostgreSQL and
// the load generator (this process).
func portalPrecedence(b *testing.B, p *Portal, nice int) {
	b.Helper()
	precedence(b, nice, append(processesNamed(b, "postgres"), os.Getpid(), p.proc.cmd.Process.Pid)...)
}

// precedence sets the nice value of every thread of each process (Linux
// keeps it per thread; threads and processes started later inherit it).
func precedence(b *testing.B, nice int, pids ...int) {
	b.Helper()
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue // ended meanwhile
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
				require.NoError(b, err, "nice %d for thread %d of %d", nice, tid, pid)
			}
		}
	}
}

// debugListen has the portal serve its profiles on a free port of its own.
func debugListen(b *testing.B) (PortalOption, string) {
	b.Helper()
	port, err := freePort()
	require.NoError(b, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return WithEnv("GANTRY_DEBUG_LISTEN", addr), "http://" + addr
}

// profileDir is where the benchmarks leave their profiles.
func profileDir(b *testing.B, env *stacktest.Env) string {
	b.Helper()
	dir := filepath.Join(env.Layout.Root, ".local", "bench-profiles")
	require.NoError(b, os.MkdirAll(dir, 0o755))
	return dir
}

// liveHeap collects the portal's garbage, keeps its heap profile in file
// and returns what is live: the caches and what requests hold.
func liveHeap(b *testing.B, p *Portal, debugURL, file string) float64 {
	b.Helper()
	profileDuring(b, debugURL+"/debug/pprof/heap?gc=1", file)()
	return metricValue(b, p.URL+"/metrics", "go_memstats_heap_alloc_bytes")
}

// procCPU is the CPU time a process has used (user and system), from
// /proc/<pid>/stat in clock ticks of 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	t, err := pidTicks(pid)
	require.NoError(b, err)
	return t.cpu()
}

// pidTicks reads process pid's /proc/PID/stat (parseStat).
func pidTicks(pid int) (procTicks, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procTicks{}, err
	}
	t, err := parseStat(string(stat))
	if err != nil {
		return procTicks{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// parseStat reads a /proc/PID/stat line: the command, in parentheses
// (it may hold spaces), the major page faults (majflt, the 12th field:
// pages read from disk), and the CPU time, utime and stime, the 14th and
// 15th fields of the line, in clock ticks.
func parseStat(stat string) (procTicks, error) {
	head, rest, ok := strings.Cut(stat, ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return procTicks{}, fmt.Errorf("not a stat line: %q", stat)
	}
	_, name, _ := strings.Cut(head, "(")
	majflt, err := strconv.ParseInt(f[9], 10, 64)
	if err != nil {
		return procTicks{}, fmt.Errorf("majflt: %w", err)
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return procTicks{}, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return procTicks{}, fmt.Errorf("stime: %w", err)
	}
	return procTicks{name: name, ticks: utime + stime, majorFaults: majflt}, nil
}

// profileDuring fetches a profile from the portal's --debug-listen address
// into file while the caller works; the returned func waits for it.
func profileDuring(b *testing.B, u, file string) (wait func()) {
	b.Helper()
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(u)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: %s", u, resp.Status)
			return
		}
		f, err := os.Create(file)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		done <- errors.Join(err, f.Close())
	}()
	return func() { require.NoError(b, <-done, "profile %s", file) }
}

// pageFile names a page's profile: /teams/{team}/jobs/{name} -> teams-team-jobs-name.
func pageFile(path string) string {
	return strings.Trim(strings.NewReplacer("/", "-", "{", "", "}", "").Replace(path), "-")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// liveList is the median time of listing the team's Workloads from the API
// server, as a page without caches would.
func liveList(b *testing.B, env *stacktest.Env, t *loadTeam) time.Duration {
	b.Helper()
	var times []time.Duration
	for range loadLiveLists {
		t0 := time.Now()
		l, err := env.Kueue.KueueV1beta2().Workloads(t.Namespace()).List(b.Context(), metav1.ListOptions{})
		require.NoError(b, err)
		times = append(times, time.Since(t0))
		require.NotEmpty(b, l.Items)
	}
	return quantile(times, 0.5)
}

// settled waits until no namespace is still being deleted: the cleanup of
// an earlier run (10,000 Jobs take 25 minutes; make bench runs the soak
// right after the load run) keeps the API server and Kueue busy on the
// same two cores, and the portal would cache its leftovers.
func settled(b *testing.B, env *stacktest.Env) {
	b.Helper()
	start := time.Now()
	var logged time.Time
	for {
		l, err := env.Kube.CoreV1().Namespaces().List(b.Context(), metav1.ListOptions{})
		require.NoError(b, err)
		var terminating []string
		for _, ns := range l.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, ns.Name)
			}
		}
		if len(terminating) == 0 {
			break
		}
		require.Less(b, time.Since(start), loadSettleLimit, "namespaces still being deleted: %v", terminating)
		if time.Since(logged) > time.Minute {
			b.Logf("waiting for an earlier run's namespaces to be deleted: %v (%s so far)", terminating, time.Since(start).Round(time.Second))
			logged = time.Now()
		}
		pause(b.Context(), 5*time.Second)
	}
}

// quiet waits until the stack has worked off the run's setup (Kueue
// admitting, pods starting, the portal's caches filling) and leaves the
// machine less than loadQuietPct busy over 10 s, or for quietLimit(n) at n
// workloads. Pages are then measured beside a cluster in its steady state,
// as in production, not beside the storm that created it, which holds both
// cores for a minute or two after the last pod runs at 10,000 workloads
// (and more than the 5 minutes once allowed at 50,000: Kueue was still
// writing Workloads' status). Each window it says which processes used
// the machine and what the API server was asked to write, so a run that
// never quiets tells why. It returns the last window's busy percentage
// (what the stack and the idle portal use) and whether the machine was
// quiet then, not just out of time (capped=true on the last SETTLE line).
func quiet(b *testing.B, env *stacktest.Env, workloads int) (float64, bool) {
	b.Helper()
	const window = 10 * time.Second
	// Each window's last readings are the next one's first.
	busy0, all0 := machineCPU(b)
	procs0, _ := processCPU()
	writes0 := apiserverWrites(b.Context(), env)
	for deadline := time.Now().Add(quietLimit(workloads)); ; {
		pause(b.Context(), window)
		busy1, all1 := machineCPU(b)
		procs1, _ := processCPU()
		writes1 := apiserverWrites(b.Context(), env)
		busy := 100 * float64(busy1-busy0) / float64(all1-all0)
		who := busiest(procs0, procs1, window, 4) + "; API server writes/s: " + writeRates(writes0, writes1, window, 4)
		busy0, all0, procs0, writes0 = busy1, all1, procs1, writes1
		// Printed, not logged: a benchmark's log keeps only its first lines
		// without -v, and a long wait is what a reader of the run needs.
		settled := busy < loadQuietPct
		capped := !settled && time.Now().After(deadline)
		fmt.Printf("SETTLE at=%s busy_pct=%.0f settled=%t capped=%t busiest=%q\n", time.Now().UTC().Format(tailClock), busy, settled, capped, who)
		if settled || capped {
			return busy, settled
		}
	}
}

// quietLimit bounds quiet: 15 minutes per 10,000 workloads begun. Kueue's
// pass took 3.5 minutes at 10,000 on an Intel Xeon, but an AMD EPYC host
// wrote the Workloads' statuses at a third of the rate and 5 minutes
// ended two runs' waits with the machine 93% and 100% busy.
func quietLimit(workloads int) time.Duration {
	return 15 * time.Minute * time.Duration(max(1, (workloads+9_999)/10_000))
}

// processCPU is every process's CPU time so far and command name, by PID.
func processCPU() (map[int]procTicks, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make(map[int]procTicks, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		t, err := pidTicks(pid)
		if err != nil {
			continue // ended meanwhile
		}
		if onViewPath(t.name) {
			t.runDelay = runDelay(pid)
		}
		out[pid] = t
	}
	return out, nil
}

// onViewPath tells the processes a view runs in: the portal, PostgreSQL's
// backends and the load generator (the users' browsers). processCPU reads
// how long their threads waited for a core.
func onViewPath(name string) bool {
	switch name {
	case "gantry", "postgres", "e2e.test":
		return true
	}
	return false
}

// runDelay is how long the threads of process pid have waited on a run
// queue for a core so far (the second figure of each thread's
// /proc/PID/task/TID/schedstat, in nanoseconds); zero where the kernel
// does not keep it.
func runDelay(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // ended meanwhile
		}
		if f := strings.Fields(string(raw)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// procTicks is a process's command name, CPU time in clock ticks and
// major page faults so far, and, for the processes on a view's path
// (onViewPath), how long its threads waited for a core.
type procTicks struct {
	name        string
	ticks       int64
	majorFaults int64
	runDelay    time.Duration
}

// cpu is the CPU time: Linux counts it in ticks of 10 ms (USER_HZ 100).
func (t procTicks) cpu() time.Duration { return time.Duration(t.ticks) * 10 * time.Millisecond }

// busiest names the top processes between two processCPU readings, with
// the share of one core each used over window.
func busiest(before, after map[int]procTicks, window time.Duration, top int) string {
	type use struct {
		name string
		pct  float64
	}
	var uses []use
	for pid, a := range after {
		// A process new in the window counts from zero.
		if d := a.cpu() - before[pid].cpu(); d > 0 {
			uses = append(uses, use{fmt.Sprintf("%s[%d]", a.name, pid), 100 * d.Seconds() / window.Seconds()})
		}
	}
	slices.SortFunc(uses, func(x, y use) int { return cmp.Compare(y.pct, x.pct) })
	parts := make([]string, 0, top)
	for _, u := range uses[:min(top, len(uses))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", u.name, u.pct))
	}
	return strings.Join(parts, ", ")
}

// delayed is how long the processes on a view's path waited for a core
// between two processCPU readings, summed by command (every PostgreSQL
// backend together), most first; "" when none did.
func delayed(before, after map[int]procTicks) string {
	waits := map[string]time.Duration{}
	for pid, a := range after {
		if d := a.runDelay - before[pid].runDelay; d > 0 {
			waits[a.name] += d
		}
	}
	names := slices.Collect(maps.Keys(waits))
	slices.SortFunc(names, func(x, y string) int { return cmp.Or(cmp.Compare(waits[y], waits[x]), strings.Compare(x, y)) })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.0f", n, ms(waits[n])))
	}
	return strings.Join(parts, ", ")
}

// faulted names the processes that read pages from disk (major faults)
// between two processCPU readings, most first, with how many; "" when none
// did. A view that waited while no process was busy may have waited for
// the disk: a host may reclaim cold cached file pages behind the
// processes' backs.
func faulted(before, after map[int]procTicks, top int) string {
	type fault struct {
		name string
		n    int64
	}
	var faults []fault
	for pid, a := range after {
		if n := a.majorFaults - before[pid].majorFaults; n > 0 {
			faults = append(faults, fault{fmt.Sprintf("%s[%d]", a.name, pid), n})
		}
	}
	slices.SortFunc(faults, func(x, y fault) int { return cmp.Compare(y.n, x.n) })
	parts := make([]string, 0, top)
	for _, f := range faults[:min(top, len(faults))] {
		parts = append(parts, fmt.Sprintf("%s %d", f.name, f.n))
	}
	return strings.Join(parts, ", ")
}

// apiserverWrites is how many writes the API server has served so far, by
// resource (and subresource) and verb, from its apiserver_request_total;
// empty when its metrics cannot be read.
func apiserverWrites(ctx context.Context, env *stacktest.Env) map[string]float64 {
	return apiserverRequests(ctx, env, false)
}

// apiserverRequests is how many requests the API server has served so far,
// by resource (and subresource) and verb, reads (GET, LIST, WATCH,
// CONNECT) only if reads; empty when its metrics cannot be read.
func apiserverRequests(ctx context.Context, env *stacktest.Env, reads bool) map[string]float64 {
	out := map[string]float64{}
	raw, err := env.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		switch l["verb"] {
		case "GET", "LIST", "WATCH", "CONNECT":
			if !reads {
				continue
			}
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := cmp.Or(l["resource"], "non-resource")
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key+" "+l["verb"]] += v
	}
	return out
}

// writeRates names the most frequent writes between two apiserverWrites
// readings, a second each.
func writeRates(before, after map[string]float64, window time.Duration, top int) string {
	keys := slices.Collect(maps.Keys(after))
	slices.SortFunc(keys, func(x, y string) int { return cmp.Compare(after[y]-before[y], after[x]-before[x]) })
	parts := make([]string, 0, top)
	for _, k := range keys[:min(top, len(keys))] {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, d/window.Seconds()))
		}
	}
	return strings.Join(parts, ", ")
}

// machineCPU is the machine's busy and total CPU time so far, in clock
// ticks over every core (/proc/stat's first line).
func machineCPU(b *testing.B) (busy, total int64) {
	b.Helper()
	stat, err := os.ReadFile("/proc/stat")
	require.NoError(b, err)
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	require.Equal(b, "cpu", fields[0], "/proc/stat: %s", line)
	for i, f := range fields[1:] {
		v, err := strconv.ParseInt(f, 10, 64)
		require.NoError(b, err)
		total += v
		// idle and iowait are the fourth and fifth figures.
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total
}

// addNodes adds n simulated nodes to the load pool and deletes them at the end.
//
// They join evenly over one lease renewal interval, as a real cluster's
// kubelets, started at different times, renew spread over it: kwok renews
// each lease every 10 s with only 4% jitter, so nodes made in the same few
// seconds keep renewing together. Made at once (in 3.4 s), 1,000 nodes
// renewed up to 156 leases in half a second against 30-50 between, and the
// API server and etcd rose from half a core to over one each time; made
// over 10 s, the renewals peak at 82.
func addNodes(b *testing.B, env *stacktest.Env, n int) {
	b.Helper()
	pools, err := devcluster.LoadPools(env.Layout.Deploy("local", "pools.yaml"))
	require.NoError(b, err)
	i := slices.IndexFunc(pools, func(p devcluster.Pool) bool { return p.Name == loadPool })
	require.GreaterOrEqual(b, i, 0, "pool %s", loadPool)
	nodes := pools[i].SimulatedNodes("load", n)
	start := time.Now()
	parallel(b, len(nodes), func(ctx context.Context, i int) error {
		pause(ctx, time.Until(start.Add(time.Duration(i)*devcluster.NodeLeaseRenewInterval/time.Duration(len(nodes)))))
		_, err := env.Kube.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
		return err
	})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, n := range nodes {
			_ = env.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		}
	})
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	remove, err := devcluster.WriteDCGMTargets(env.Layout, "load", pools[i], names)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, remove()) })
}

// waitDCGMSeries waits until Prometheus holds a GPU utilization series for
// each running pod of the load teams, as dcgm-exporter would on each node,
// and returns how many it holds.
func waitDCGMSeries(b *testing.B, env *stacktest.Env, teams []*loadTeam, running int) int {
	b.Helper()
	namespaces := make([]string, len(teams))
	for i, t := range teams {
		namespaces[i] = t.Namespace()
	}
	q := fmt.Sprintf(`count(DCGM_FI_DEV_GPU_UTIL{namespace=~%q})`, strings.Join(namespaces, "|"))
	var n int
	require.Eventually(b, func() bool {
		v, _ := env.PromScalar(b, q)
		n = int(v)
		return n >= running
	}, 5*time.Minute, 2*time.Second, "DCGM series of the %d running pods in Prometheus (last count %d)", running, n)
	return n
}

// populate creates n Jobs spread over the teams. The first `running` go
// through Kueue and run (pods on the simulated nodes, for a day); the rest
// are suspended Jobs with the Workload Kueue would make, pre-built and
// inactive, so Kueue neither admits nor schedules them. The running ones
// come first, loadRunBatch at a time, each batch running before the next
// and all before the rest are made. Behind 9,000 new Jobs, Kueue started
// none of the admitted ones in 12 minutes; given 1,000 at once, it admitted
// them and evicted them again and again after its 30 s PodsReady timeout,
// though kwok ran their pods: the Jobs' ready counts came too late.
func populate(b *testing.B, env *stacktest.Env, teams []*loadTeam, n, running int) {
	b.Helper()
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	kc, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	qc, err := kueueclient.NewForConfig(cfg)
	require.NoError(b, err)
	for i := range n {
		t := teams[i%len(teams)]
		t.jobs = append(t.jobs, loadJobName(i))
	}
	create := func(from int) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			i += from
			t := teams[i%len(teams)]
			return createWorkload(ctx, kc, qc, t.Name, t.Namespace(), loadJobName(i), i < running)
		}
	}
	ctx, cancel := context.WithTimeout(b.Context(), createLimit(n))
	defer cancel()
	for from := 0; from < running; from += loadRunBatch {
		batch := min(loadRunBatch, running-from)
		parallel(b, batch, create(from))
		waitRunning(ctx, b, kc, teams, from+batch)
	}
	parallel(b, n-running, create(running))
}

// waitRunning waits until the teams have want pods running.
func waitRunning(ctx context.Context, b *testing.B, kc kubernetes.Interface, teams []*loadTeam, want int) {
	b.Helper()
	for {
		var pods int
		for _, t := range teams {
			l, err := kc.CoreV1().Pods(t.Namespace()).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
			require.NoError(b, err)
			pods += len(l.Items)
		}
		if pods >= want {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d pods running: %v", pods, want, context.Cause(ctx))
		case <-time.After(time.Second):
		}
	}
}

// createLimit bounds making n objects: loadCreateLimit per 10,000 begun.
func createLimit(n int) time.Duration {
	return loadCreateLimit * time.Duration(max(1, (n+9_999)/10_000))
}

// parallel runs fn for 0..n-1 on loadWorkers goroutines; the first error fails b.
func parallel(b *testing.B, n int, fn func(ctx context.Context, i int) error) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), createLimit(n))
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for range loadWorkers {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					cancel()
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		b.Fatalf("load: %v", *p)
	}
	require.NoError(b, ctx.Err(), "%d creates within %s", n, createLimit(n))
}

func loadJobName(i int) string { return fmt.Sprintf("load-%05d", i) }

func createWorkload(ctx context.Context, kc kubernetes.Interface, qc kueueclient.Interface, team, ns, name string, run bool) error {
	job := stacktest.CompliantJob(team, name, corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi"), loadGPU: resource.MustParse("1")})
	job.Labels[naming.LabelOwner] = "load-01"
	if run {
		job.Spec.Template.Annotations = map[string]string{naming.AnnotationSimulateDuration: "24h"}
		if _, err := kc.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create job %s: %w", name, err)
		}
		return nil
	}
	job.Labels["kueue.x-k8s.io/prebuilt-workload-name"] = name
	created, err := kc.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create job %s: %w", name, err)
	}
	wl := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"kueue.x-k8s.io/job-uid": string(created.UID)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job",
				Name: name, UID: created.UID, Controller: ptr.To(true)}}},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(naming.LocalQueue),
			Active:    ptr.To(false),
			PodSets:   []kueue.PodSet{{Name: kueue.DefaultPodSetName, Count: ptr.Deref(created.Spec.Parallelism, 1), Template: created.Spec.Template}},
		},
	}
	if _, err := qc.KueueV1beta2().Workloads(ns).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create workload %s: %w", name, err)
	}
	return nil
}

// recordLoad writes the launch record of every job (its page reads it) and
// n ended runs, this month, into the ledger.
func recordLoad(b *testing.B, db *store.Store, teams []*loadTeam, n int) {
	b.Helper()
	now := time.Now().UTC()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	parallel(b, n, func(ctx context.Context, i int) error {
		t := teams[i%len(teams)]
		name := loadJobName(i)
		if _, err := db.RecordLaunch(ctx, store.Launch{LaunchID: "load-" + t.Name + "-" + name, Team: t.Name, Namespace: t.Namespace(),
			Name: name, Kind: string(catalog.KindTraining), Template: "stacktest", TemplateVersion: 1, Owner: "load-01",
			Parameters: []byte(`{}`), Manifest: "# load run"}); err != nil {
			return err
		}
		ended := monthStart.Add(time.Duration(i) * now.Sub(monthStart) / time.Duration(n))
		_, err := db.RecordRun(ctx, store.LedgerRow{RunKey: fmt.Sprintf("load-%s-%d", t.Name, i), WorkloadUID: fmt.Sprintf("uid-%d", i),
			Team: t.Name, Namespace: t.Namespace(), JobName: fmt.Sprintf("ended-%05d", i), JobKind: "Job", Owner: "load-01",
			Flavor: loadPool, Resource: string(loadGPU), GPUs: 1, CreatedAt: ended.Add(-2 * time.Hour), AdmittedAt: ended.Add(-time.Hour), EndedAt: ended,
			Outcome: "succeeded", WaitSeconds: float64(i % 600), AllocatedGPUHours: 1, USDPerHour: money.Dollar, CostUSD: money.Dollar})
		return err
	})
}

// signInAll signs every load user and admin in, each with a session of
// their own.
func signInAll(b testing.TB, p *Portal) (users, admins []*http.Client) {
	b.Helper()
	start := time.Now()
	users = make([]*http.Client, loadUsers)
	for i := range users {
		users[i] = signIn(b, p, fmt.Sprintf("load-%02d", i+1))
	}
	admins = make([]*http.Client, loadAdmins)
	for i := range admins {
		admins[i] = signIn(b, p, fmt.Sprintf("load-admin-%d", i+1))
	}
	b.Logf("%d users and %d admins signed in through the IdP in %s", loadUsers, loadAdmins, time.Since(start).Round(time.Second))
	return users, admins
}

// signIn signs a user in through the IdP's login form with a plain HTTP
// client (a session of its own) and returns that client.
func signIn(b testing.TB, p *Portal, user string) *http.Client {
	b.Helper()
	return signInThrough(b, p, user, &http.Client{Timeout: loadRequestTime,
		Transport: &http.Transport{MaxIdleConnsPerHost: loadUsers, MaxConnsPerHost: loadUsers}})
}

// signInThrough signs user in through the IdP's login form with c, which
// then holds the session and no longer follows redirects, and returns it.
func signInThrough(b testing.TB, p *Portal, user string, c *http.Client) *http.Client {
	b.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(b, err)
	c.Jar = jar
	resp, err := c.Get(p.URL + "/auth/login?next=/")
	require.NoError(b, err)
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	resp.Body.Close()
	require.NoError(b, err)
	action, ok := doc.Find("form").Attr("action")
	require.True(b, ok, "%s: no login form at %s", user, resp.Request.URL)
	form := resp.Request.URL.ResolveReference(&url.URL{Path: action})
	resp, err = c.PostForm(form.String(), url.Values{"login": {user}, "password": {DevPassword}})
	require.NoError(b, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode, "%s: sign-in ended at %s", user, resp.Request.URL)
	require.True(b, strings.HasPrefix(resp.Request.URL.String(), p.URL), "%s: sign-in ended at %s", user, resp.Request.URL)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// load sends loadRequests GETs from loadUsers users at once (user u sends
// with clients[u % len(clients)], and pauses about think between a page and
// the next request) and returns their latencies and how many did not answer
// 200.
func load(b *testing.B, clients []*http.Client, base string, path func(user, i int) string, think time.Duration) ([]time.Duration, []viewTiming, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), loadPageLimit)
	defer cancel()
	lat := make([]time.Duration, loadRequests)
	timings := make([]viewTiming, loadRequests)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for u := range loadUsers {
		client := clients[u%len(clients)]
		wg.Go(func() {
			// Users start spread over one pause, not all at the same instant.
			if think > 0 {
				pause(ctx, rand.N(think))
			}
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= loadRequests {
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path(u, i), nil)
				if err != nil {
					failed.Add(1)
					continue
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				timings[i] = viewTiming{at: t0, header: resp.Header.Get("Server-Timing"), trailer: resp.Trailer.Get("Server-Timing"), path: req.URL.Path}
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				if think > 0 {
					pause(ctx, think/2+rand.N(think))
				}
			}
		})
	}
	wg.Wait()
	require.NoError(b, ctx.Err(), "%d requests within %s", loadRequests, loadPageLimit)
	return lat, timings, int(failed.Load())
}

// viewTiming is when a view was asked for and its Server-Timing header
// and trailer.
type viewTiming struct {
	at     time.Time
	header string
	// trailer holds the view's whole time in the portal, its page written
	// out included ("view").
	trailer string
	// path is the page viewed (the launch run leaves it empty).
	path string
}

// tailTimings says where the slowest 1% of views (by the time their user
// waited) spent it, from their Server-Timing headers and trailers: time in
// the portal in all and before the first byte, and waits on PostgreSQL (with its queries per
// view), Prometheus and the Kubernetes API server, each averaged over
// those views; in how many distinct seconds they were asked for (few means
// bursts); and the median view's PostgreSQL queries, for scale.
func tailTimings(lat []time.Duration, timings []viewTiming) string {
	order := slowestOrder(lat)
	tail := order[:max(1, len(order)/100)]
	sum := map[string]float64{}
	var client float64
	seconds := map[int64]bool{}
	for _, i := range tail {
		seconds[timings[i].at.Unix()] = true
		durs, calls := servertiming.Parse(timings[i].header)
		for k, v := range durs {
			sum[k] += v
		}
		whole, _ := servertiming.Parse(timings[i].trailer)
		sum["view"] += whole["view"]
		sum["db_calls"] += float64(calls["db"])
		client += ms(lat[i])
	}
	n := float64(len(tail))
	_, median := servertiming.Parse(timings[order[len(order)/2]].header)
	return fmt.Sprintf("tail_client_ms=%.1f tail_view_ms=%.1f tail_server_ms=%.1f tail_db_ms=%.1f tail_db_queries=%.1f tail_prom_ms=%.1f tail_kube_ms=%.1f tail_seconds=%d p50_db_queries=%d",
		client/n, sum["view"]/n, sum["total"]/n, sum["db"]/n, sum["db_calls"]/n, sum["prom"]/n, sum["kube"]/n, len(seconds), median["db"])
}

// viewTimes is each view's whole time in the portal, from its
// Server-Timing trailer (zero for a view without one).
func viewTimes(timings []viewTiming) []time.Duration {
	out := make([]time.Duration, len(timings))
	for i, t := range timings {
		whole, _ := servertiming.Parse(t.trailer)
		out[i] = time.Duration(whole["view"] * float64(time.Millisecond))
	}
	return out
}

// tailClock is how TAIL lines write times: as PostgreSQL's log does.
const tailClock = "15:04:05.000"

// slowestOrder is the views' indexes, slowest first.
func slowestOrder(lat []time.Duration) []int {
	order := make([]int, len(lat))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(lat[b], lat[a]) })
	return order
}

// slowestViews lists the slowest 1% of views as time asked/ms waited/ms
// in the portal, the page written out included/ms waited on PostgreSQL and
// in how many round trips/the path viewed: which
// of a page's views (a running job's, an endpoint's) make its tail, and
// whether they waited on one round trip or several.
func slowestViews(lat []time.Duration, timings []viewTiming) string {
	order := slowestOrder(lat)
	var out []string
	for _, i := range order[:max(1, len(order)/100)] {
		durs, calls := servertiming.Parse(timings[i].header)
		whole, _ := servertiming.Parse(timings[i].trailer)
		out = append(out, fmt.Sprintf("%s/%.0f/view=%.0f/db=%.0fx%d%s", timings[i].at.UTC().Format(tailClock), ms(lat[i]), whole["view"], durs["db"], calls["db"], timings[i].path))
	}
	return strings.Join(out, ",")
}

// logSlowStatements has PostgreSQL log every statement of the load's
// database that takes 25 ms or more, and every wait for a lock as long
// (in .local/logs/postgres.log), so a slow view's wait on it can be
// matched to a statement. The settings are the database's, dropped with
// it.
func logSlowStatements(b *testing.B, dsn string) {
	b.Helper()
	u, err := url.Parse(dsn)
	require.NoError(b, err)
	admin, err := pgx.Connect(b.Context(), devcluster.PostgresAdminURL())
	require.NoError(b, err)
	defer admin.Close(context.WithoutCancel(b.Context()))
	for _, set := range []string{"log_min_duration_statement = '25ms'", "log_lock_waits = on", "deadlock_timeout = '25ms'"} {
		_, err = admin.Exec(b.Context(), fmt.Sprintf(`ALTER DATABASE %q SET %s`, strings.TrimPrefix(u.Path, "/"), set))
		require.NoError(b, err)
	}
}

// pause waits d, or less if ctx ends first; it reports whether ctx is
// still going.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// warmUp has every user view the page once, unmeasured, so the run
// measures the portal serving it and not its first computation of each
// team's figures after a start (all 50 users would wait for that once).
func warmUp(b *testing.B, clients []*http.Client, base string, path func(user, i int) string) {
	b.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures = map[string]int{}
		failed   int
	)
	t0 := time.Now()
	for u := range loadUsers {
		wg.Go(func() {
			t := time.Now()
			resp, err := clients[u%len(clients)].Get(base + path(u, u))
			outcome := ""
			switch {
			case err != nil:
				outcome = err.Error()
				if ue := (*url.Error)(nil); errors.As(err, &ue) {
					outcome = ue.Err.Error() // without the view's own URL
				}
			case resp.StatusCode != http.StatusOK:
				outcome = resp.Status
				// Where a redirect went, without its query (the view's own URL).
				if to, err := resp.Location(); err == nil {
					outcome += " to " + to.Path
				}
			}
			if resp != nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			if outcome == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			failed++
			failures[fmt.Sprintf("%s after %s", outcome, time.Since(t).Round(time.Second))]++
		})
	}
	wg.Wait()
	require.Zero(b, failed, "warm-up views that did not answer 200 (started %s), by what they got: %v",
		t0.UTC().Format("15:04:05"), failures)
}

func get(client *http.Client, u string) (string, int) {
	resp, err := client.Get(u)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0
	}
	return string(body), resp.StatusCode
}

// quantile of latencies (0..1), nearest rank.
func quantile(lat []time.Duration, q float64) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

// procRSS is the resident memory of a process, from /proc/<pid>/status.
func procRSS(b *testing.B, pid int) int64 {
	b.Helper()
	return procStatusKB(b, pid, "VmRSS") << 10
}

// metricValue reads one unlabelled sample from a Prometheus text endpoint.
func metricValue(b *testing.B, u, name string) float64 {
	b.Helper()
	v, ok := metricSample(b, u, name)
	if !ok {
		b.Fatalf("no %s on %s", name, u)
	}
	return v
}

// metricSample reads one sample, name with its labels as exposed (e.g.
// `x_total{outcome="pending"}`), from a Prometheus text endpoint; false
// when there is none (a counter never incremented).
func metricSample(b *testing.B, u, name string) (float64, bool) {
	b.Helper()
	resp, err := http.Get(u)
	require.NoError(b, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(b, err)
			return f, true
		}
	}
	return 0, false
}

// poolFigures are the portal's counters of its connections to PostgreSQL.
type poolFigures struct{ connects, prepares, waits float64 }

func (p poolFigures) minus(q poolFigures) poolFigures {
	return poolFigures{p.connects - q.connects, p.prepares - q.prepares, p.waits - q.waits}
}

// dbPool reads the connections the portal opened to PostgreSQL, the
// statements it prepared on them and the times a request waited for one
// (store.Register).
func dbPool(b *testing.B, u string) poolFigures {
	return poolFigures{
		connects: metricValue(b, u, "gantry_db_connections_opened_total"),
		prepares: metricValue(b, u, "gantry_db_statements_prepared_total"),
		waits:    metricValue(b, u, `go_sql_wait_count_total{db_name="gantry"}`),
	}
}

// panelCounts are the job panels that showed a running job's GPU
// figures, those that showed its figures of a moment ago, those that
// showed them without their chart, and those that showed them as on their
// way (web's jobGPU counter).
type panelCounts struct{ shown, earlier, chartPending, pending float64 }

func (p panelCounts) total() float64 { return p.shown + p.earlier + p.chartPending + p.pending }

func (p panelCounts) minus(q panelCounts) panelCounts {
	return panelCounts{p.shown - q.shown, p.earlier - q.earlier, p.chartPending - q.chartPending, p.pending - q.pending}
}

func gpuPanels(b *testing.B, u string) panelCounts {
	count := func(outcome string) float64 {
		v, _ := metricSample(b, u, `gantry_job_page_gpu_figures_total{outcome="`+outcome+`"}`)
		return v
	}
	return panelCounts{shown: count("shown"), earlier: count("earlier"), chartPending: count("chart_pending"), pending: count("pending")}
}
