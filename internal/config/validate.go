package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks the values; it is called by Load/Parse and should be called
// again after MergeFlags.
func (c *Config) Validate() error {
	var errs []error
	paths := []struct{ key, v string }{
		{"manifestDir", c.ManifestDir}, {"stateDir", c.StateDir}, {"logDir", c.LogDir},
		{"runDir", c.RunDir}, {"socket", c.Socket}, {"cniConfDir", c.CNIConfDir},
	}
	if c.ImagesDir != "" {
		paths = append(paths, struct{ key, v string }{"imagesDir", c.ImagesDir})
	}
	for _, p := range paths {
		if !filepath.IsAbs(p.v) {
			errs = append(errs, fmt.Errorf("%s: must be an absolute path, got %q", p.key, p.v))
		}
	}
	for i, d := range c.CNIBinDirs {
		if !filepath.IsAbs(d) {
			errs = append(errs, fmt.Errorf("cniBinDirs[%d]: must be an absolute path, got %q", i, d))
		}
	}
	if len(c.CNIBinDirs) == 0 {
		errs = append(errs, errors.New("cniBinDirs: must not be empty"))
	}
	if c.ContainerdAddress == "" {
		errs = append(errs, errors.New("containerdAddress: must not be empty"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace: must not be empty"))
	}
	if c.ServiceCIDR != "" {
		if p, err := netip.ParsePrefix(c.ServiceCIDR); err != nil || !p.Addr().Is4() || p.Bits() > 30 {
			errs = append(errs, fmt.Errorf("serviceCIDR: %q: want an IPv4 CIDR of at least 4 addresses, e.g. 10.96.0.0/16", c.ServiceCIDR))
		}
	}
	if c.ClusterDomain != "" {
		if msgs := validation.IsDNS1123Subdomain(strings.TrimSuffix(c.ClusterDomain, ".")); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("clusterDomain: %q: %s", c.ClusterDomain, strings.Join(msgs, "; ")))
		}
	}
	if c.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddress); err != nil {
			errs = append(errs, fmt.Errorf("metricsAddress: want host:port: %w", err))
		}
	}
	if c.KubeAPIAddress != "" {
		if _, _, err := net.SplitHostPort(c.KubeAPIAddress); err != nil {
			errs = append(errs, fmt.Errorf("kubeAPIAddress: want host:port: %w", err))
		}
	}
	if c.MaxPods <= 0 {
		errs = append(errs, fmt.Errorf("maxPods: must be positive, got %d", c.MaxPods))
	}
	errs = append(errs, validateNodeLabels(c.NodeLabels)...)
	if c.ShimGroupSize < 1 || c.ShimGroupSize > MaxShimGroupSize {
		errs = append(errs, fmt.Errorf("shimGroupSize: must be 1..%d, got %d", MaxShimGroupSize, c.ShimGroupSize))
	}
	if c.CgroupParent == "" || strings.HasPrefix(c.CgroupParent, "/") || strings.Contains(c.CgroupParent, "..") {
		errs = append(errs, fmt.Errorf("cgroupParent: must be a relative cgroup name without \"..\", got %q", c.CgroupParent))
	}
	switch c.CgroupDriver {
	case CgroupDriverAuto, CgroupDriverSystemd, CgroupDriverCgroupfs:
	default:
		errs = append(errs, fmt.Errorf("cgroupDriver: unsupported value %q (want auto, systemd or cgroupfs)", c.CgroupDriver))
	}
	if c.RuntimeRequestTimeout < time.Second {
		errs = append(errs, fmt.Errorf("runtimeRequestTimeout: must be at least 1s, got %s", c.RuntimeRequestTimeout))
	}
	if c.ResyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("resyncPeriod: must be positive, got %s", c.ResyncPeriod))
	}
	if c.RelistPeriod <= 0 {
		errs = append(errs, fmt.Errorf("relistPeriod: must be positive, got %s", c.RelistPeriod))
	}
	if c.RollbackAfter < 0 {
		errs = append(errs, fmt.Errorf("rollbackAfter: must not be negative, got %s", c.RollbackAfter))
	}
	if c.ShutdownGracePeriod < 0 || c.ShutdownGracePeriodCriticalPods < 0 {
		errs = append(errs, fmt.Errorf("shutdownGracePeriod, shutdownGracePeriodCriticalPods: must not be negative"))
	}
	if c.ShutdownGracePeriodCriticalPods > c.ShutdownGracePeriod {
		errs = append(errs, fmt.Errorf("shutdownGracePeriodCriticalPods (%s): must not exceed shutdownGracePeriod (%s)",
			c.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriod))
	}
	if c.LogMaxSize <= 0 {
		errs = append(errs, fmt.Errorf("logMaxSize: must be positive, got %d", c.LogMaxSize))
	}
	if c.LogMaxFiles < 1 {
		errs = append(errs, fmt.Errorf("logMaxFiles: must be at least 1, got %d", c.LogMaxFiles))
	}
	errs = append(errs, c.Disk.validate(), c.Eviction.validate(), c.ManifestURL.validate(), c.Security.validate(), c.Cluster.validate())
	return errors.Join(errs...)
}
