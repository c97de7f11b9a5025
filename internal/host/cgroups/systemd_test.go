package cgroups

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	corev1 "k8s.io/api/core/v1"
)

// fakeConn records calls and keeps a set of "loaded" units.
type fakeConn struct {
	mu      sync.Mutex
	units   map[string][]sddbus.Property
	calls   []string
	result  string // job result ("" = done)
	stopErr error
}

func newFakeConn() *fakeConn { return &fakeConn{units: map[string][]sddbus.Property{}} }

func (f *fakeConn) job(ch chan<- string) {
	if f.result == "" {
		ch <- "done"
	} else {
		ch <- f.result
	}
}

func (f *fakeConn) StartTransientUnitContext(_ context.Context, name, mode string, props []sddbus.Property, ch chan<- string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "start "+name)
	if _, ok := f.units[name]; ok {
		return 0, godbus.Error{Name: errUnitExists, Body: []any{"Unit " + name + " already exists."}}
	}
	f.units[name] = props
	f.job(ch)
	return 1, nil
}

func (f *fakeConn) StopUnitContext(_ context.Context, name, mode string, ch chan<- string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "stop "+name)
	if f.stopErr != nil {
		return 0, f.stopErr
	}
	if _, ok := f.units[name]; !ok {
		return 0, godbus.Error{Name: errNoSuchUnit, Body: []any{"Unit " + name + " not loaded."}}
	}
	delete(f.units, name)
	f.job(ch)
	return 1, nil
}

func (f *fakeConn) SetUnitPropertiesContext(_ context.Context, name string, runtime bool, props ...sddbus.Property) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "set "+name)
	f.units[name] = append(f.units[name], props...)
	return nil
}

func (f *fakeConn) ResetFailedUnitContext(_ context.Context, name string) error {
	return godbus.Error{Name: errNoSuchUnit}
}

func (f *fakeConn) ListUnitsByPatternsContext(_ context.Context, states, patterns []string) ([]sddbus.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sddbus.UnitStatus
	for name := range f.units {
		if strings.HasPrefix(name, strings.TrimSuffix(patterns[0], "*.slice")) {
			out = append(out, sddbus.UnitStatus{Name: name})
		}
	}
	return out, nil
}

// prop returns the last value of a property.
func prop(props []sddbus.Property, name string) (any, bool) {
	var v any
	found := false
	for _, p := range props {
		if p.Name == name {
			v, found = p.Value.Value(), true
		}
	}
	return v, found
}

func newSystemdManager(t *testing.T, mode string) (*Manager, *fakeConn) {
	t.Helper()
	fc := newFakeConn()
	m, err := New(context.Background(), Options{
		Logger:     testLogger(t),
		detectMode: func(string) string { return mode },
		systemdUp:  func() bool { return true },
		newConn:    func(context.Context) (systemdConn, error) { return fc, nil },
		Driver:     map[bool]string{true: DriverAuto, false: DriverSystemd}[mode == ModeUnified],
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Driver() != DriverSystemd {
		t.Fatalf("driver = %s", m.Driver())
	}
	return m, fc
}

func TestSystemdEnsure(t *testing.T) {
	ctx := context.Background()
	m, fc := newSystemdManager(t, ModeUnified)
	r := Resources{CPUShares: 1024, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, PidsLimit: 50}
	pc, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, r)
	if err != nil {
		t.Fatal(err)
	}
	slice := "podhost-burstable-pod0b1c2d3e_aaaa_bbbb_cccc_0123456789ab.slice"
	if pc.Name != slice || pc.Driver != DriverSystemd {
		t.Fatalf("pc = %+v", pc)
	}
	wantCalls := []string{"start podhost.slice", "start podhost-burstable.slice", "start " + slice}
	if fmt.Sprint(fc.calls) != fmt.Sprint(wantCalls) {
		t.Errorf("calls = %v, want %v", fc.calls, wantCalls)
	}
	props := fc.units[slice]
	for name, want := range map[string]any{
		"CPUWeight": uint64(39), "CPUQuotaPerSecUSec": uint64(500000), "MemoryMax": uint64(64 << 20),
		"TasksMax": uint64(50), "Wants": []string{"podhost-burstable.slice"}, "DefaultDependencies": false,
	} {
		if got, ok := prop(props, name); !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, want)
		}
	}
	if got := m.ContainerPath(pc, "c1"); got != slice+":podhost:c1" {
		t.Errorf("ContainerPath = %q", got)
	}

	// Again: units exist → properties are updated, nothing fails.
	fc.calls = nil
	if _, err := m.EnsurePod(ctx, uid, corev1.PodQOSBurstable, Resources{CPUShares: 2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units[slice], "MemoryMax"); got != uint64(math.MaxUint64) {
		t.Errorf("MemoryMax after update = %v, want infinity", got)
	}
	if !strings.Contains(fmt.Sprint(fc.calls), "set "+slice) {
		t.Errorf("calls = %v, want a set-property of the pod slice", fc.calls)
	}
}

func TestSystemdQoSSlices(t *testing.T) {
	ctx := context.Background()
	m, fc := newSystemdManager(t, ModeUnified)
	be, err := m.EnsurePod(ctx, "be1", corev1.PodQOSBestEffort, Resources{CPUShares: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units["podhost-besteffort.slice"], "CPUWeight"); got != uint64(1) {
		t.Errorf("besteffort slice CPUWeight = %v", got)
	}
	g, err := m.EnsurePod(ctx, "g1", corev1.PodQOSGuaranteed, Resources{CPUShares: 1024, CPUQuota: 100000, MemoryLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "podhost-podg1.slice" {
		t.Errorf("guaranteed slice = %q", g.Name)
	}
	if got, _ := prop(fc.units[g.Name], "Wants"); fmt.Sprint(got) != "[podhost.slice]" {
		t.Errorf("guaranteed Wants = %v", got)
	}
	pods, err := m.ListPods(ctx)
	if err != nil || len(pods) != 2 {
		t.Fatalf("ListPods = %+v, %v", pods, err)
	}
	for _, p := range []PodCgroup{be, g, be} { // twice: NoSuchUnit is success
		if err := m.RemovePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if pods, _ := m.ListPods(ctx); len(pods) != 0 {
		t.Errorf("ListPods after remove = %+v", pods)
	}
}

func TestSystemdV1PropsAndErrors(t *testing.T) {
	ctx := context.Background()
	m, fc := newSystemdManager(t, ModeHybrid)
	pc, err := m.EnsurePod(ctx, "u1", corev1.PodQOSGuaranteed, Resources{CPUShares: 512, MemoryLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := prop(fc.units[pc.Name], "CPUShares"); got != uint64(512) {
		t.Errorf("CPUShares = %v", got)
	}
	if got, _ := prop(fc.units[pc.Name], "MemoryLimit"); got != uint64(1<<20) {
		t.Errorf("MemoryLimit = %v", got)
	}
	fc.result = "failed"
	if _, err := m.EnsurePod(ctx, "u2", corev1.PodQOSGuaranteed, Resources{}); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("failed job: err = %v", err)
	}
	fc.stopErr = errors.New("boom")
	if err := m.RemovePod(ctx, pc); err == nil {
		t.Error("RemovePod: want error")
	}
}

func TestDriverSelection(t *testing.T) {
	ctx := context.Background()
	noConn := func(context.Context) (systemdConn, error) { return nil, errors.New("no bus") }
	base := Options{Root: t.TempDir(), Logger: testLogger(t), newConn: noConn,
		detectMode: func(string) string { return ModeUnified }}
	mustWrite(t, base.Root+"/cgroup.controllers", "cpu memory pids")

	o := base
	o.systemdUp = func() bool { return true }
	if m, err := New(ctx, o); err != nil || m.Driver() != DriverCgroupfs {
		t.Errorf("auto with unreachable D-Bus: %v, %v", m, err)
	}
	o.Driver = DriverSystemd
	o.systemdUp = func() bool { return false }
	if _, err := New(ctx, o); err == nil {
		t.Error("systemd driver without systemd: want error")
	}
	o.Driver = "bogus"
	if _, err := New(ctx, o); err == nil {
		t.Error("unknown driver: want error")
	}
	o = base
	o.detectMode = func(string) string { return ModeUnavailable }
	if _, err := New(ctx, o); err == nil {
		t.Error("no cgroupfs: want error")
	}
}

func TestRealHostAuto(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	m, err := New(context.Background(), Options{Parent: fmt.Sprintf("podhost-test-%d", os.Getpid()), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mode=%s driver=%s", m.Mode(), m.Driver())
	if m.Mode() != ModeUnified && m.Driver() != DriverCgroupfs {
		t.Errorf("non-unified host must use cgroupfs, got %s", m.Driver())
	}
}
