package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	corev1 "k8s.io/api/core/v1"
)

// systemdConn is the part of go-systemd's *dbus.Conn the driver uses (faked
// in tests).
type systemdConn interface {
	StartTransientUnitContext(ctx context.Context, name, mode string, props []sddbus.Property, ch chan<- string) (int, error)
	StopUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error)
	SetUnitPropertiesContext(ctx context.Context, name string, runtime bool, props ...sddbus.Property) error
	ResetFailedUnitContext(ctx context.Context, name string) error
	ListUnitsByPatternsContext(ctx context.Context, states, patterns []string) ([]sddbus.UnitStatus, error)
}

const (
	errUnitExists = "org.freedesktop.systemd1.UnitExists"
	errNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit"
	jobTimeout    = 30 * time.Second
)

func dialSystemd(ctx context.Context) (systemdConn, error) {
	return sddbus.NewWithContext(ctx)
}

func closeConn(c systemdConn) {
	if cl, ok := c.(interface{ Close() }); ok {
		cl.Close()
	}
}

// systemdDriver manages pods as transient slices.
type systemdDriver struct {
	conn   systemdConn
	parent string
	root   string // the cgroup mount (exists, on v2)
	v2     bool
	log    *slog.Logger
}

func (d *systemdDriver) ensure(ctx context.Context, pc PodCgroup, r Resources) error {
	top := parentSlice(d.parent)
	if err := d.startSlice(ctx, top, "-.slice", nil, false); err != nil {
		return err
	}
	parent := top
	if pc.QOS != corev1.PodQOSGuaranteed {
		parent = qosSlice(d.parent, pc.QOS)
		var res []sddbus.Property
		if pc.QOS == corev1.PodQOSBestEffort {
			res = []sddbus.Property{d.cpuSharesProp(MinShares)}
		}
		if err := d.startSlice(ctx, parent, top, res, true); err != nil {
			return err
		}
	}
	return d.startSlice(ctx, pc.Name, parent, d.resourceProps(r), true)
}

// startSlice starts a transient slice and waits for the job. An existing
// unit gets res applied with SetUnitProperties when update is set.
func (d *systemdDriver) startSlice(ctx context.Context, name, parent string, res []sddbus.Property, update bool) error {
	props := append(d.baseProps(name, parent), res...)
	ch := make(chan string, 1)
	_, err := d.conn.StartTransientUnitContext(ctx, name, "replace", props, ch)
	if isDBusError(err, errUnitExists) {
		if !update || len(res) == 0 {
			return nil
		}
		if err := d.conn.SetUnitPropertiesContext(ctx, name, true, res...); err != nil {
			return fmt.Errorf("set properties of %s: %w", name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	if err := waitJob(ctx, ch); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	return nil
}

func (d *systemdDriver) baseProps(name, parent string) []sddbus.Property {
	props := []sddbus.Property{
		sddbus.PropDescription("podhost " + name),
		newProp("DefaultDependencies", false),
		newProp("MemoryAccounting", true),
		newProp("CPUAccounting", true),
		newProp("TasksAccounting", true),
	}
	if parent != "-.slice" {
		props = append(props, sddbus.PropWants(parent))
	}
	if d.v2 {
		return append(props, newProp("IOAccounting", true))
	}
	return append(props, newProp("BlockIOAccounting", true))
}

// resourceProps maps r to unit properties; unset limits are "infinity" so
// an update also clears them.
func (d *systemdDriver) resourceProps(r Resources) []sddbus.Property {
	var props []sddbus.Property
	if r.CPUShares > 0 {
		props = append(props, d.cpuSharesProp(r.CPUShares))
	}
	props = append(props, newProp("CPUQuotaPerSecUSec", cpuQuotaPerSecUSec(r)))
	if r.CPUQuota > 0 && period(r) != DefaultPeriod {
		props = append(props, newProp("CPUQuotaPeriodUSec", period(r)))
	}
	mem := uint64(math.MaxUint64)
	if r.MemoryLimit > 0 {
		mem = uint64(r.MemoryLimit)
	}
	if d.v2 {
		props = append(props, newProp("MemoryMax", mem))
	} else {
		props = append(props, newProp("MemoryLimit", mem))
	}
	tasks := uint64(math.MaxUint64)
	if r.PidsLimit > 0 {
		tasks = uint64(r.PidsLimit)
	}
	return append(props, newProp("TasksMax", tasks))
}

func (d *systemdDriver) cpuSharesProp(shares uint64) sddbus.Property {
	if d.v2 {
		return newProp("CPUWeight", SharesToWeight(shares))
	}
	return newProp("CPUShares", shares)
}

// cpuQuotaPerSecUSec is runc's conversion: quota per second, rounded up to
// systemd's 10ms granularity; MaxUint64 (infinity) when unlimited.
func cpuQuotaPerSecUSec(r Resources) uint64 {
	if r.CPUQuota <= 0 {
		return math.MaxUint64
	}
	v := uint64(r.CPUQuota) * 1000000 / period(r)
	if v%10000 != 0 {
		v = (v/10000 + 1) * 10000
	}
	return v
}

func (d *systemdDriver) remove(ctx context.Context, pc PodCgroup) error {
	ch := make(chan string, 1)
	_, err := d.conn.StopUnitContext(ctx, pc.Name, "replace", ch)
	if isDBusError(err, errNoSuchUnit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", pc.Name, err)
	}
	if err := waitJob(ctx, ch); err != nil {
		return fmt.Errorf("stop %s: %w", pc.Name, err)
	}
	if err := d.conn.ResetFailedUnitContext(ctx, pc.Name); err != nil && !isDBusError(err, errNoSuchUnit) {
		d.log.Debug("cgroups: reset-failed", "unit", pc.Name, "err", err)
	}
	return nil
}

func (d *systemdDriver) list(ctx context.Context) ([]PodCgroup, error) {
	units, err := d.conn.ListUnitsByPatternsContext(ctx, nil, []string{slicePrefix(d.parent) + "-*.slice"})
	if err != nil {
		return nil, err
	}
	var out []PodCgroup
	for _, u := range units {
		if pc, ok := parseSlice(d.parent, u.Name); ok {
			out = append(out, pc)
		}
	}
	return out, nil
}

// waitJob waits for a systemd job result ("done" is success).
func waitJob(ctx context.Context, ch <-chan string) error {
	t := time.NewTimer(jobTimeout)
	defer t.Stop()
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("systemd job result %q", res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for systemd job: %w", ctx.Err())
	case <-t.C:
		return fmt.Errorf("systemd job timed out after %s", jobTimeout)
	}
}

func newProp(name string, v any) sddbus.Property {
	return sddbus.Property{Name: name, Value: godbus.MakeVariant(v)}
}

func isDBusError(err error, name string) bool {
	var de godbus.Error
	if errors.As(err, &de) {
		return de.Name == name
	}
	var dp *godbus.Error
	return errors.As(err, &dp) && dp.Name == name
}
