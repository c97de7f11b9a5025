package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/ops/nodeshutdown"
)

// UnitFile is where install.sh puts podhost's unit.
const UnitFile = "/etc/systemd/system/podhost.service"

// hostInfo is what the systemd and security checks read (faked in tests).
type hostInfo struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
	// logind reports whether systemd-logind answers on the system bus.
	logind func() error
}

func realHostInfo() hostInfo {
	return hostInfo{getenv: os.Getenv, readFile: os.ReadFile, logind: func() error {
		l, err := nodeshutdown.ConnectLogind()
		if err != nil {
			return err
		}
		return l.Close()
	}}
}

func systemdChecks(cfg *config.Config, h hostInfo) []CheckResult {
	return []CheckResult{checkWatchdog(h), checkInhibitor(cfg, h), checkAppArmor(h), checkSeccomp(h)}
}

var watchdogSecRe = regexp.MustCompile(`(?m)^\s*WatchdogSec\s*=\s*(\S+)`)

// checkWatchdog: WATCHDOG_USEC in the environment (check run by systemd),
// else WatchdogSec= in the installed unit.
func checkWatchdog(h hostInfo) CheckResult {
	r := CheckResult{Name: "watchdog"}
	if us := h.getenv("WATCHDOG_USEC"); us != "" {
		r.Status, r.Detail = StatusOK, "WATCHDOG_USEC="+us+" (running under systemd)"
		return r
	}
	data, err := h.readFile(UnitFile)
	if err != nil {
		r.Status, r.Detail = StatusWarn, fmt.Sprintf("no %s (not installed?): no systemd watchdog", UnitFile)
		return r
	}
	m := watchdogSecRe.FindSubmatch(data)
	if m == nil || string(m[1]) == "0" || string(m[1]) == "infinity" {
		r.Status, r.Detail = StatusWarn, UnitFile+": no WatchdogSec=: a stuck podhost is not restarted"
		return r
	}
	r.Status, r.Detail = StatusOK, fmt.Sprintf("%s: WatchdogSec=%s (podhost pings while its sync loop progresses)", UnitFile, m[1])
	return r
}

// checkInhibitor: graceful node shutdown needs systemd-logind.
func checkInhibitor(cfg *config.Config, h hostInfo) CheckResult {
	r := CheckResult{Name: "node-shutdown"}
	if cfg.ShutdownGracePeriod <= 0 {
		r.Status, r.Detail = StatusOK, "graceful node shutdown off (shutdownGracePeriod: 0)"
		return r
	}
	if err := h.logind(); err != nil {
		r.Status, r.Detail = StatusWarn, fmt.Sprintf("shutdownGracePeriod %s but systemd-logind is not reachable (%v): graceful node shutdown unavailable", cfg.ShutdownGracePeriod, err)
		return r
	}
	r.Status, r.Detail = StatusOK, fmt.Sprintf("logind reachable: a delay inhibitor of %s (%s for critical pods)",
		cfg.ShutdownGracePeriod, cfg.ShutdownGracePeriodCriticalPods.Round(time.Second))
	return r
}

// checkAppArmor: /sys/module/apparmor/parameters/enabled is "Y".
func checkAppArmor(h hostInfo) CheckResult {
	r := CheckResult{Name: "apparmor"}
	data, err := h.readFile("/sys/module/apparmor/parameters/enabled")
	if err == nil && strings.TrimSpace(string(data)) == "Y" {
		r.Status, r.Detail = StatusOK, "enabled"
		return r
	}
	r.Status, r.Detail = StatusWarn, "not enabled: pods asking for an AppArmor profile other than unconfined fail to start"
	return r
}

// checkSeccomp: a Seccomp: line in /proc/self/status, else
// CONFIG_SECCOMP_FILTER=y in /proc/config.gz or /boot/config-<release>.
func checkSeccomp(h hostInfo) CheckResult {
	r := CheckResult{Name: "seccomp"}
	if data, err := h.readFile("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Seccomp:") {
				r.Status, r.Detail = StatusOK, "available (/proc/self/status)"
				return r
			}
		}
	}
	if kernelConfigHas(h, "CONFIG_SECCOMP_FILTER=y") {
		r.Status, r.Detail = StatusOK, "available (kernel config)"
		return r
	}
	r.Status, r.Detail = StatusWarn, "not available: RuntimeDefault/Localhost seccomp profiles cannot be applied"
	return r
}

func kernelConfigHas(h hostInfo, line string) bool {
	if gz, err := h.readFile("/proc/config.gz"); err == nil {
		if zr, err := gzip.NewReader(bytes.NewReader(gz)); err == nil {
			if data, err := io.ReadAll(io.LimitReader(zr, 4<<20)); err == nil && bytes.Contains(data, []byte(line)) {
				return true
			}
		}
	}
	rel, err := h.readFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	data, err := h.readFile("/boot/config-" + strings.TrimSpace(string(rel)))
	return err == nil && bytes.Contains(data, []byte(line))
}
