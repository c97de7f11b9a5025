package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Eviction defaults: the kubelet's (evictionPressureTransitionPeriod 5m,
// evictionMaxPodGracePeriod 0, its 10 s eviction monitoring period).
const (
	DefaultEvictionPressureTransitionPeriod = 5 * time.Minute
	DefaultEvictionMonitoringPeriod         = 10 * time.Second
)

// evictionSignals are the signals the thresholds may name (eviction.Parse
// checks them again, with the rest).
var evictionSignals = []string{"imagefs.available", "imagefs.inodesFree", "memory.available", "nodefs.available", "nodefs.inodesFree"}

// Eviction is the eviction manager's configuration, under the kubelet's
// names (docs/configuration.md).
type Eviction struct {
	// EvictionHard: signal → threshold (quantity or percentage); the
	// kubelet's defaults unless the file sets it (then exactly as given).
	EvictionHard map[string]string
	// EvictionSoft and EvictionSoftGracePeriod: soft thresholds and how
	// long each must hold before a pod is evicted.
	EvictionSoft, EvictionSoftGracePeriod map[string]string
	// EvictionPressureTransitionPeriod: how long a pressure condition
	// stays after its signal recovered.
	EvictionPressureTransitionPeriod time.Duration
	// EvictionMaxPodGracePeriod: the grace period (seconds) of a pod
	// evicted for a soft threshold, at most its own.
	EvictionMaxPodGracePeriod int64
	// EvictionMonitoringPeriod: how often the signals and the pods' local
	// storage are measured (the kubelet's is fixed at 10 s).
	EvictionMonitoringPeriod time.Duration
}

func defaultEviction() Eviction {
	return Eviction{
		EvictionHard:                     map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"},
		EvictionPressureTransitionPeriod: DefaultEvictionPressureTransitionPeriod,
		EvictionMonitoringPeriod:         DefaultEvictionMonitoringPeriod,
	}
}

// evictionFile is Eviction's on-disk form (inlined in file).
type evictionFile struct {
	EvictionHard                     map[string]string `json:"evictionHard"`
	EvictionSoft                     map[string]string `json:"evictionSoft"`
	EvictionSoftGracePeriod          map[string]string `json:"evictionSoftGracePeriod"`
	EvictionPressureTransitionPeriod *string           `json:"evictionPressureTransitionPeriod"`
	EvictionMaxPodGracePeriod        *int64            `json:"evictionMaxPodGracePeriod"`
	EvictionMonitoringPeriod         *string           `json:"evictionMonitoringPeriod"`
}

func (f *evictionFile) applyTo(e *Eviction) error {
	if f.EvictionHard != nil {
		e.EvictionHard = f.EvictionHard
	}
	if f.EvictionSoft != nil {
		e.EvictionSoft = f.EvictionSoft
	}
	if f.EvictionSoftGracePeriod != nil {
		e.EvictionSoftGracePeriod = f.EvictionSoftGracePeriod
	}
	if f.EvictionMaxPodGracePeriod != nil {
		e.EvictionMaxPodGracePeriod = *f.EvictionMaxPodGracePeriod
	}
	var err error
	if e.EvictionPressureTransitionPeriod, err = parseDuration("evictionPressureTransitionPeriod", f.EvictionPressureTransitionPeriod, e.EvictionPressureTransitionPeriod); err != nil {
		return err
	}
	e.EvictionMonitoringPeriod, err = parseDuration("evictionMonitoringPeriod", f.EvictionMonitoringPeriod, e.EvictionMonitoringPeriod)
	return err
}

func (e *Eviction) validate() error {
	errs := []error{validThresholds("evictionHard", e.EvictionHard), validThresholds("evictionSoft", e.EvictionSoft)}
	for _, k := range sortedKeys(e.EvictionSoftGracePeriod) {
		if d, err := time.ParseDuration(e.EvictionSoftGracePeriod[k]); err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("evictionSoftGracePeriod.%s: must be a duration >= 0, got %q", k, e.EvictionSoftGracePeriod[k]))
		}
		if _, ok := e.EvictionSoft[k]; !ok {
			errs = append(errs, fmt.Errorf("evictionSoftGracePeriod.%s: no evictionSoft threshold for it", k))
		}
	}
	for _, k := range sortedKeys(e.EvictionSoft) {
		if _, ok := e.EvictionSoftGracePeriod[k]; !ok {
			errs = append(errs, fmt.Errorf("evictionSoft.%s: grace period must be specified in evictionSoftGracePeriod", k))
		}
	}
	if e.EvictionPressureTransitionPeriod < 0 || e.EvictionMaxPodGracePeriod < 0 {
		errs = append(errs, errors.New("evictionPressureTransitionPeriod, evictionMaxPodGracePeriod: must not be negative"))
	}
	if e.EvictionMonitoringPeriod < time.Second {
		errs = append(errs, fmt.Errorf("evictionMonitoringPeriod: must be at least 1s, got %s", e.EvictionMonitoringPeriod))
	}
	return errors.Join(errs...)
}

// validThresholds: known signals, each a quantity or a percentage in [0, 100].
func validThresholds(key string, m map[string]string) error {
	var errs []error
	for _, k := range sortedKeys(m) {
		v := strings.TrimSpace(m[k])
		if !slices.Contains(evictionSignals, k) {
			errs = append(errs, fmt.Errorf("%s.%s: unsupported eviction signal (supported: %s)", key, k, strings.Join(evictionSignals, ", ")))
			continue
		}
		if p, ok := strings.CutSuffix(v, "%"); ok {
			if f, err := strconv.ParseFloat(p, 64); err != nil || f < 0 || f > 100 {
				errs = append(errs, fmt.Errorf("%s.%s: must be a percentage between 0%% and 100%%, got %q", key, k, v))
			}
			continue
		}
		if q, err := resource.ParseQuantity(v); err != nil || q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must be a quantity >= 0 or a percentage, got %q", key, k, v))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
