//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/testenv"
)

// footprintRow is one N of the footprint table (scripts/bench.sh).
type footprintRow struct {
	N            int     `json:"n"`
	ColdPodhostS float64 `json:"coldStartPodhostS"`
	ColdFloorS   float64 `json:"coldStartFloorS"`
	ColdRatio    float64 `json:"coldStartRatio"`
	// Each run, in order (the cold figures above are their medians).
	ColdPodhostRunsS []float64 `json:"coldStartPodhostRunsS"`
	ColdFloorRunsS   []float64 `json:"coldStartFloorRunsS"`
	// The median of podhost run i over floor run i (runs
	// alternate): drift of the machine over the runs cancels out.
	ColdPairRatio float64 `json:"coldStartPairedRatio"`
	AddMs         float64 `json:"addToRunningMs"`
	AddFloorMs    float64 `json:"addToRunningFloorMs"`
	RemoveMs      float64 `json:"removeToGoneMs"`
	RemoveFloorMs float64 `json:"removeToGoneFloorMs"`
	// The same floors measured while podhost's N pods run (the condition
	// podhost's add and remove are measured in), same run.
	AddFloorLoadedMs    float64 `json:"addToRunningFloorLoadedMs"`
	RemoveFloorLoadedMs float64 `json:"removeToGoneFloorLoadedMs"`
	// Each loaded add, in order (floor k right before podhost's add k),
	// and the median of podhost add k over floor add k.
	AddRunsMs            []float64 `json:"addToRunningRunsMs"`
	AddFloorLoadedRunsMs []float64 `json:"addToRunningFloorLoadedRunsMs"`
	AddPairRatio         float64   `json:"addToRunningPairedRatio"`
	PodhostRSSKiB        int       `json:"podhostRssKiB"`
	// PodhostRSSAnonKiB + PodhostRSSFileKiB = PodhostRSSKiB: the heap,
	// stacks and runtime vs the binary's mapped text and rodata.
	PodhostRSSAnonKiB int `json:"podhostRssAnonKiB"`
	PodhostRSSFileKiB int `json:"podhostRssFileKiB"`
	// The same BENCH_SETTLE (30s) after the cold start: the start's burst
	// given back (threads ended, executable pages trimmed), what stays.
	PodhostSettledRSSAnonKiB int `json:"podhostSettledRssAnonKiB"`
	PodhostSettledRSSFileKiB int `json:"podhostSettledRssFileKiB"`
	// At N=30, after the two idle windows (BENCH_SETTLE + 2 x BENCH_IDLE
	// after the cold start).
	PodhostIdleRSSAnonKiB int     `json:"podhostIdleRssAnonKiB,omitempty"`
	PodhostIdleRSSFileKiB int     `json:"podhostIdleRssFileKiB,omitempty"`
	ContainerdRSSKiB      int     `json:"containerdRssKiB"`
	ShimPSSKiB            int     `json:"shimPssKiBPerPod,omitempty"`
	LogDriverPSSKiB       int     `json:"logDriverPssKiBPerContainer,omitempty"`
	Shims                 int     `json:"shims,omitempty"` // shim processes for the N pods
	PodhostIdleCPUPct     float64 `json:"podhostIdleCpuPct,omitempty"`
	// PodhostSettledCPUPct: the window right after the first, when the
	// first resync of every pod, the first full housekeeping pass and the
	// start's garbage are behind.
	PodhostSettledCPUPct float64 `json:"podhostSettledCpuPct,omitempty"`
	// CPU seconds used during a cold start (mean over the runs), all
	// cores: where podhost's extra time goes.
	ColdCPU  coldCPU `json:"coldStartCpuS"`
	FloorCPU coldCPU `json:"floorCpuS"`
}

// coldCPU splits the CPU time of a cold start: the whole machine, containerd,
// and the process doing the starts (podhost, or the bench itself for the
// floor); the rest is shims, runc, CNI plugins, log drivers and the kernel's
// threads.
type coldCPU struct {
	Busy       float64 `json:"busy"`
	Containerd float64 `json:"containerd"`
	Starter    float64 `json:"starter"`
}

type cpuSample struct{ busy, ctrd, starter int }

func sampleCPU(starter int) cpuSample {
	return cpuSample{busy: busyTicks(), ctrd: cpuTicks(env.ContainerdPID()), starter: cpuTicks(starter)}
}

// plus adds c / runs: the mean over runs, summed one run at a time.
func (m coldCPU) plus(c coldCPU, runs int) coldCPU {
	r := float64(runs)
	return coldCPU{Busy: m.Busy + c.Busy/r, Containerd: m.Containerd + c.Containerd/r, Starter: m.Starter + c.Starter/r}
}

func (s cpuSample) since(s0 cpuSample) coldCPU {
	return coldCPU{Busy: float64(s.busy-s0.busy) / 100, Containerd: float64(s.ctrd-s0.ctrd) / 100, Starter: float64(s.starter-s0.starter) / 100}
}

// busyTicks is the machine's non-idle CPU time in USER_HZ ticks.
func busyTicks() int {
	bs, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(bs), "\n")
	total := 0
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.Atoi(f)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest is in user already
			total += v
		}
	}
	return total
}

type footprintReport struct {
	Rows []footprintRow `json:"rows"`
	// OldLogDriverPSSKiB: the same 30 pods with podhost itself re-executed
	// as the log driver (--log-driver <podhost>), same run.
	OldLogDriverPSSKiB int    `json:"oldLogDriverPssKiBPerContainer,omitempty"`
	LogDriverBytes     int64  `json:"logDriverBinaryBytes"`
	PodhostBytes       int64  `json:"podhostBinaryBytes"`
	IdleWindow         string `json:"idleWindow"`
	SettleWindow       string `json:"settleWindow"`
}

// idlePod exits at once on SIGTERM: removal latency is podhost's, not a
// grace period's.
func idlePod(name string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, env.ImageRef))
}

// BenchmarkFootprint measures, for each N of BENCH_N (default "1,30"):
// podhost's cold start against the floor (measureFloorBoth), add→running
// and remove→gone of one more pod against a one-pod floor, containerd's
// RSS, podhost's RSS right after the cold start (the reaper may already have
// trimmed: it runs when every pod has synced) and BENCH_SETTLE (30s) later;
// at N=30 also the per-pod PSS of the shim and the log driver, podhost's
// idle CPU over BENCH_IDLE (default 60s) after the settle window and again
// in the next window (settled), its RSS after them, and the log driver PSS
// of the old re-executed podhost. Writes BENCH_OUT (.json and
// .txt) when set. Run by `make bench`.
func BenchmarkFootprint(b *testing.B) {
	var ns []int
	for _, f := range strings.Split(envOr("BENCH_N", "1,30"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("BENCH_N: %q: want pod counts of at least 1 (%v)", f, err)
		}
		ns = append(ns, n)
	}
	idle, err := time.ParseDuration(envOr("BENCH_IDLE", "60s"))
	if err != nil {
		b.Fatalf("BENCH_IDLE: %v", err)
	}
	settle, err := time.ParseDuration(envOr("BENCH_SETTLE", "30s"))
	if err != nil {
		b.Fatalf("BENCH_SETTLE: %v", err)
	}
	for i := 0; i < b.N; i++ {
		rep := footprintReport{IdleWindow: idle.String(), SettleWindow: settle.String()}
		for _, n := range ns {
			rep.Rows = append(rep.Rows, footprintRun(b, n, settle, idle))
			if n == 30 {
				rep.OldLogDriverPSSKiB = oldDriverPSS(b, n)
			}
		}
		rep.LogDriverBytes, rep.PodhostBytes = fileSize(env.LogDriverBin), fileSize(env.PodhostBin)
		writeFootprint(b, rep)
	}
}

func footprintRun(b *testing.B, n int, settle, idle time.Duration) footprintRow {
	row := footprintRow{N: n}
	// Cold starts alternate floor and podhost; all but the last podhost
	// daemon are torn down before the next floor.
	var floors, starts []time.Duration
	for k := range coldRuns(n) {
		fs, _, fcpu := measureFloorCPU(b, n)
		floors, row.FloorCPU = append(floors, fs), row.FloorCPU.plus(fcpu, coldRuns(n))
		if k == coldRuns(n)-1 {
			break // the last podhost start comes after the unloaded floors
		}
		pd, ps, pcpu := coldStart(b, n)
		starts, row.ColdCPU = append(starts, ps), row.ColdCPU.plus(pcpu, coldRuns(n))
		pd.teardown()
	}
	var unloaded latencies
	for range latencyRuns {
		unloaded.add(measureFloorBoth(b, 1))
	}
	row.AddFloorMs, row.RemoveFloorMs = unloaded.medians()

	d, ps, pcpu := coldStart(b, n)
	starts, row.ColdCPU = append(starts, ps), row.ColdCPU.plus(pcpu, coldRuns(n))
	row.ColdPodhostRunsS, row.ColdFloorRunsS = seconds(starts), seconds(floors)
	row.ColdPodhostS, row.ColdFloorS = median(starts).Seconds(), median(floors).Seconds()
	row.ColdRatio = row.ColdPodhostS / row.ColdFloorS
	row.ColdPairRatio = pairedRatio(row.ColdPodhostRunsS, row.ColdFloorRunsS)
	row.PodhostRSSKiB, row.ContainerdRSSKiB = rssKiB(d.cmd.Process.Pid), rssKiB(env.ContainerdPID())
	row.PodhostRSSAnonKiB, row.PodhostRSSFileKiB = rssSplitKiB(d.cmd.Process.Pid)
	time.Sleep(settle) // the measurement window itself, not a wait
	row.PodhostSettledRSSAnonKiB, row.PodhostSettledRSSFileKiB = rssSplitKiB(d.cmd.Process.Pid)
	if n == 30 {
		row.ShimPSSKiB, row.LogDriverPSSKiB, row.Shims = helperPSS(b, d, n, env.LogDriverBin)
		row.PodhostIdleCPUPct = idleCPU(d.cmd.Process.Pid, idle)
		row.PodhostSettledCPUPct = idleCPU(d.cmd.Process.Pid, idle)
		row.PodhostIdleRSSAnonKiB, row.PodhostIdleRSSFileKiB = rssSplitKiB(d.cmd.Process.Pid)
	}

	// Interleaved, so a slower or busier minute of the machine weighs on
	// both the same.
	var floor, ph latencies
	for k := range latencyRuns {
		floor.add(measureFloorBoth(b, 1))
		ph.add(addRemove(b, d, n, fmt.Sprintf("lat%d", k)))
	}
	row.AddFloorLoadedMs, row.RemoveFloorLoadedMs = floor.medians()
	row.AddMs, row.RemoveMs = ph.medians()
	row.AddRunsMs, row.AddFloorLoadedRunsMs = millis(ph.adds), millis(floor.adds)
	row.AddPairRatio = pairedRatio(row.AddRunsMs, row.AddFloorLoadedRunsMs)
	if f := os.Getenv("BENCH_LOG"); f != "" { // the daemon's log (debug), for profiling
		_ = os.WriteFile(fmt.Sprintf("%s.%d", f, n), d.out.Bytes(), 0o644)
	}
	d.teardown()
	return row
}

// coldStart starts a podhost daemon with n manifests in its directory and
// returns it once all n pods run (seen through the API's watch), with the
// wall time from exec and the CPU the start used.
func coldStart(b *testing.B, n int) (*podhostd, time.Duration, coldCPU) {
	d := newPodhostd(b)
	asShipped(b, d)
	if g := os.Getenv("BENCH_SHIM_GROUP_SIZE"); g != "" {
		appendConfig(b, d, "shimGroupSize: "+g+"\n")
	}
	for j := 0; j < n; j++ {
		d.writeManifest(fmt.Sprintf("f%d.yaml", j), idlePod(fmt.Sprintf("f%d", j)))
	}
	start, cpu0 := time.Now(), sampleCPU(0)
	d.startNoWait()
	d.waitAllRunningWatched(n, 8*time.Minute)
	return d, time.Since(start), sampleCPU(d.cmd.Process.Pid).since(cpu0)
}

// asShipped drops newPodhostd's 5 s manifest relist (for tests that edit
// files behind fsnotify's back), which would be counted as idle CPU, and
// allows 300 pods.
func asShipped(b *testing.B, d *podhostd) {
	cfg, err := os.ReadFile(d.configPath)
	if err != nil || !bytes.Contains(cfg, []byte("relistPeriod: 5s\n")) {
		b.Fatalf("config %s: no relistPeriod line to drop (%v)", d.configPath, err)
	}
	cfg = append(bytes.Replace(cfg, []byte("relistPeriod: 5s\n"), nil, 1), "maxPods: 300\n"...)
	if err := os.WriteFile(d.configPath, cfg, 0o644); err != nil {
		b.Fatal(err)
	}
}

// coldRuns is how many cold starts of each (floor, podhost) the reported
// ones are the medians of: single runs of 30 pods on 2 cores spread over
// ±15 %, and the machine drifts over a run (docs/decisions.md 16). Seven
// up to 30 pods (a pair takes ~10 s), three at 100, one at 250 pods, where
// a run takes a minute, to keep make bench under 10 minutes.
func coldRuns(n int) int {
	switch {
	case n > 100:
		return 1
	case n > 30:
		return 3
	}
	return 7
}

// pairedRatio is the median of podhost[i]/floor[i].
func pairedRatio(podhost, floor []float64) float64 {
	var rs []float64
	for i := range min(len(podhost), len(floor)) {
		rs = append(rs, podhost[i]/floor[i])
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

func millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// latencyRuns is how many adds and removes each latency is the median of:
// a single add of one pod on 2 busy cores spreads over ±20 %, and one add
// and remove take well under a second.
const latencyRuns = 9

// latencies collects add and remove latencies.
type latencies struct{ adds, removes []time.Duration }

func (l *latencies) add(add, remove time.Duration) {
	l.adds, l.removes = append(l.adds, add), append(l.removes, remove)
}

// medians returns the median add and remove in ms.
func (l *latencies) medians() (addMs, removeMs float64) {
	return ms(median(l.adds)), ms(median(l.removes))
}

// addRemove writes one more manifest and returns the time until the pod's
// containers run (seen through the API's watch, not a polling interval),
// then removes it and returns the time until podhost and containerd have
// forgotten it (n other pods keep running).
func addRemove(b *testing.B, d *podhostd, n int, name string) (add, remove time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	running := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		var once bool
		_ = d.client.WatchPods(ctx, func(e api.WatchEvent) error {
			if !once {
				once = true
				close(watching) // the first batch: the pods as they are
			}
			if e.Object.Name == name && allRunning(&e.Object) {
				close(running)
				return errors.New("done")
			}
			return nil
		})
	}()
	select {
	case <-watching:
	case <-ctx.Done():
		b.Fatal("watch did not start")
	}
	t0 := time.Now()
	d.writeManifest(name+".yaml", idlePod(name))
	select {
	case <-running:
	case <-ctx.Done():
		b.Fatalf("%s not running: %s", name, statusSummary(d.pod(name)))
	}
	add = time.Since(t0)
	t0 = time.Now()
	d.removeManifest(name + ".yaml")
	if err := waitFor(time.Minute, func() (bool, error) {
		c, err := countContainers()
		return d.pod(name) == nil && c == n, err
	}); err != nil {
		b.Fatalf("%s not gone: %v", name, err)
	}
	return add, time.Since(t0)
}

// oldDriverPSS runs n pods with podhost itself as the log driver and
// returns the log drivers' mean PSS.
func oldDriverPSS(b *testing.B, n int) int {
	d := newPodhostd(b)
	for j := 0; j < n; j++ {
		d.writeManifest(fmt.Sprintf("o%d.yaml", j), idlePod(fmt.Sprintf("o%d", j)))
	}
	d.startArgs(append(d.args(), "--log-driver", env.PodhostBin))
	d.waitAllRunning(n, 5*time.Minute)
	_, drv, _ := helperPSS(b, d, n, env.PodhostBin)
	d.teardown()
	return drv
}

// helperPSS returns the PSS (KiB) of the shims per pod (pods share shims:
// each shim counted once) and the mean per container of the log drivers
// (children of the shim running driverExe).
func helperPSS(b *testing.B, d *podhostd, n int, driverExe string) (shim, driver, shimCount int) {
	l, err := d.client.ListPods(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var shims, drivers, nd int
	seen := map[int]bool{}
	for i := range l.Items {
		p := &l.Items[i]
		if sh := testenv.ParentPID(containerPID(b, p, "main")); !seen[sh] {
			seen[sh] = true
			shims += pssKiB(sh)
		}
	}
	for sh := range seen {
		for _, pid := range childrenByExe(sh, driverExe) {
			drivers += pssKiB(pid)
			nd++
		}
	}
	if nd != n {
		b.Fatalf("%d log drivers (%s) for %d pods", nd, driverExe, n)
	}
	return shims / len(l.Items), drivers / nd, len(seen)
}

// idleCPU returns pid's CPU use in percent of one core over window.
func idleCPU(pid int, window time.Duration) float64 {
	c0, t0 := cpuTicks(pid), time.Now()
	time.Sleep(window) // the measurement window itself, not a wait
	c1, el := cpuTicks(pid), time.Since(t0)
	return float64(c1-c0) / 100 / el.Seconds() * 100 // USER_HZ = 100
}

func cpuTicks(pid int) int {
	bs, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(bs)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return u + k
}

func writeFootprint(b *testing.B, rep footprintReport) {
	var t strings.Builder
	fmt.Fprintf(&t, "%5s %8s %8s %6s %6s %7s %6s %7s %6s %6s %6s %7s %8s %8s %8s %8s %8s\n", "N", "cold(s)", "floor(s)", "ratio", "÷med",
		"add(ms)", "floor", "loaded", "ratio", "rm(ms)", "floor", "loaded", "podhost", "settled", "(anon", "file)", "ctrd")
	for _, r := range rep.Rows {
		settled := r.PodhostSettledRSSAnonKiB + r.PodhostSettledRSSFileKiB
		fmt.Fprintf(&t, "%5d %8.2f %8.2f %6.2f %6.2f %7.0f %6.0f %7.0f %6.2f %6.0f %6.0f %7.0f %6.1fMi %6.1fMi %6.1fMi %6.1fMi %6.1fMi\n", r.N, r.ColdPodhostS, r.ColdFloorS,
			r.ColdPairRatio, r.ColdRatio, r.AddMs, r.AddFloorMs, r.AddFloorLoadedMs, r.AddPairRatio, r.RemoveMs, r.RemoveFloorMs, r.RemoveFloorLoadedMs,
			mib(r.PodhostRSSKiB), mib(settled), mib(r.PodhostSettledRSSAnonKiB), mib(r.PodhostSettledRSSFileKiB), mib(r.ContainerdRSSKiB))
	}
	for _, r := range rep.Rows {
		fmt.Fprintf(&t, "N=%d cold start runs (s), in order, floor and podhost alternating: podhost %s, floor %s\n",
			r.N, runList(r.ColdPodhostRunsS, "%.2f"), runList(r.ColdFloorRunsS, "%.2f"))
	}
	fmt.Fprintf(&t, "cold: medians of the runs; ratio: the median of podhost run i / floor run i (they alternate); ÷med: median / median\n")
	fmt.Fprintf(&t, "podhost RSS: right after the (last) cold start (the first trim may be done), and %s later (settled: anon + file, smaps_rollup)\n", rep.SettleWindow)
	for _, r := range rep.Rows {
		fmt.Fprintf(&t, "N=%d cold start CPU s, mean of the runs (busy / containerd / starter / rest): podhost %.2f / %.2f / %.2f / %.2f, floor %.2f / %.2f / %.2f / %.2f\n", r.N,
			r.ColdCPU.Busy, r.ColdCPU.Containerd, r.ColdCPU.Starter, r.ColdCPU.Busy-r.ColdCPU.Containerd-r.ColdCPU.Starter,
			r.FloorCPU.Busy, r.FloorCPU.Containerd, r.FloorCPU.Starter, r.FloorCPU.Busy-r.FloorCPU.Containerd-r.FloorCPU.Starter)
	}
	fmt.Fprintf(&t, "add/rm floor: one pod through the containerd client with nothing else running; loaded: the same while podhost's N pods run, interleaved with podhost's adds; medians of %d; ratio: the median of podhost add k / loaded floor add k\n", latencyRuns)
	for _, r := range rep.Rows {
		fmt.Fprintf(&t, "N=%d add runs (ms), in order: podhost %s, loaded floor %s (median / median %.2f)\n",
			r.N, runList(r.AddRunsMs, "%.0f"), runList(r.AddFloorLoadedRunsMs, "%.0f"), r.AddMs/r.AddFloorLoadedMs)
	}
	for _, r := range rep.Rows {
		if r.N == 30 {
			helpers := r.ShimPSSKiB + r.LogDriverPSSKiB
			fmt.Fprintf(&t, "N=30 per-pod helper PSS: shim %.2f MiB (%d shims) + log driver %.2f MiB = %.2f MiB (old podhost log-driver: %.2f MiB)\n",
				mib(r.ShimPSSKiB), r.Shims, mib(r.LogDriverPSSKiB), mib(helpers), mib(rep.OldLogDriverPSSKiB))
			fmt.Fprintf(&t, "N=30 whole stack: podhost %.1f + containerd %.1f + helpers 30 x %.2f = %.1f MiB (kubelet + containerd CRI here: ~240 MiB)\n",
				mib(r.PodhostRSSKiB), mib(r.ContainerdRSSKiB), mib(helpers), mib(r.PodhostRSSKiB+r.ContainerdRSSKiB+30*helpers))
			fmt.Fprintf(&t, "N=30 podhost idle CPU over %s: %.2f%% of one core right after the settle window, %.2f%% in the next %[1]s\n",
				rep.IdleWindow, r.PodhostIdleCPUPct, r.PodhostSettledCPUPct)
			fmt.Fprintf(&t, "N=30 podhost RSS after the idle windows: %.1f MiB (anon %.1f + file %.1f)\n",
				mib(r.PodhostIdleRSSAnonKiB+r.PodhostIdleRSSFileKiB), mib(r.PodhostIdleRSSAnonKiB), mib(r.PodhostIdleRSSFileKiB))
		}
	}
	fmt.Fprintf(&t, "binaries: podhost %.1f MiB, podhost-log-driver %.1f MiB\n", float64(rep.PodhostBytes)/(1<<20), float64(rep.LogDriverBytes)/(1<<20))
	out := os.Getenv("BENCH_OUT")
	if out == "" {
		b.Log("\n" + t.String())
		return
	}
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(out+".json", append(js, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(out+".txt", []byte(t.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

func runList(s []float64, format string) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(parts, " ")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func mib(kib int) float64        { return float64(kib) / 1024 }

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}
