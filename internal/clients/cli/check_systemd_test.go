package cli

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/config"
)

func fakeHost(env map[string]string, files map[string]string, logindErr error) hostInfo {
	return hostInfo{
		getenv: func(k string) string { return env[k] },
		readFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
		logind: func() error { return logindErr },
	}
}

func TestSystemdChecks(t *testing.T) {
	unit := "[Service]\nType=notify\nWatchdogSec=30s\n"
	tests := []struct {
		name     string
		env      map[string]string
		files    map[string]string
		logind   error
		grace    time.Duration
		want     map[string]Status
		contains map[string]string
	}{
		{
			name: "under systemd with everything", env: map[string]string{"WATCHDOG_USEC": "30000000"}, grace: 30 * time.Second,
			files:    map[string]string{"/sys/module/apparmor/parameters/enabled": "Y\n", "/proc/self/status": "Name:\tpodhost\nSeccomp:\t0\n"},
			want:     map[string]Status{"watchdog": StatusOK, "node-shutdown": StatusOK, "apparmor": StatusOK, "seccomp": StatusOK},
			contains: map[string]string{"watchdog": "WATCHDOG_USEC=30000000", "node-shutdown": "logind reachable"},
		},
		{
			name: "from the unit file, seccomp from the kernel config", grace: 0,
			files: map[string]string{UnitFile: unit, "/proc/sys/kernel/osrelease": "6.1.0-9-amd64\n",
				"/boot/config-6.1.0-9-amd64": "CONFIG_SECCOMP=y\nCONFIG_SECCOMP_FILTER=y\n"},
			want:     map[string]Status{"watchdog": StatusOK, "node-shutdown": StatusOK, "apparmor": StatusWarn, "seccomp": StatusOK},
			contains: map[string]string{"watchdog": "WatchdogSec=30s", "node-shutdown": "off", "seccomp": "kernel config"},
		},
		{
			name: "nothing: no unit, no logind", grace: 20 * time.Second, logind: errors.New("no system bus"),
			files:    map[string]string{"/sys/module/apparmor/parameters/enabled": "N\n"},
			want:     map[string]Status{"watchdog": StatusWarn, "node-shutdown": StatusWarn, "apparmor": StatusWarn, "seccomp": StatusWarn},
			contains: map[string]string{"node-shutdown": "graceful node shutdown unavailable"},
		},
		{
			name: "unit without WatchdogSec", files: map[string]string{UnitFile: "[Service]\nType=notify\n"},
			want: map[string]Status{"watchdog": StatusWarn}, contains: map[string]string{"watchdog": "no WatchdogSec"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.ShutdownGracePeriod = tt.grace
			got := map[string]CheckResult{}
			for _, r := range systemdChecks(cfg, fakeHost(tt.env, tt.files, tt.logind)) {
				got[r.Name] = r
			}
			for name, want := range tt.want {
				if got[name].Status != want {
					t.Errorf("%s = %s %q, want %s", name, got[name].Status, got[name].Detail, want)
				}
			}
			for name, sub := range tt.contains {
				if !strings.Contains(got[name].Detail, sub) {
					t.Errorf("%s detail %q, want it to contain %q", name, got[name].Detail, sub)
				}
			}
		})
	}
}
