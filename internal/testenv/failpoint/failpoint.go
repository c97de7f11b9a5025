// Package failpoint is a CNI plugin for tests that fails, or hangs, on
// command: "fail ADD twice", "fail DEL three times", "hang ADD for 60s".
// Chained last in a conflist (after bridge/host-local and portmap), it makes
// a pod's network set-up or teardown fail after the real plugins have done
// their work, which exercises podhost's rollback and retry paths against real
// leases, veths and iptables rules.
//
// The plugin's network config names a control file:
//
//	{"type": "podhost-failpoint", "controlFile": "/tmp/x/control.json"}
//
// The control file holds a Script (JSON, see Control.Set); every call takes
// a lock (control.json.lock), consumes what the script says for its command
// and appends a Call to the log (control.json.log, JSON lines), so tests can
// see every ADD, DEL and CHECK and what the plugin did with it. A missing
// control file means "succeed".
//
// A successful ADD echoes prevResult (a chained plugin must pass the
// previous plugins' result through; converted to the config's cniVersion),
// a successful DEL or CHECK prints nothing. An injected failure is a CNI
// error (code 999) whose message never says "not found", which go-cni would
// take for success. A hanging call gives up as soon as the process that ran
// it (the runtime) is gone, so killing podhost mid-ADD leaves no plugin
// process behind.
//
// The plugin binary is ./cmd/podhost-failpoint; Build compiles it.
package failpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// PluginType is the plugin's "type" in a conflist (its binary's name).
const PluginType = "podhost-failpoint"

// CNI commands a Script can act on.
const (
	CmdAdd   = "ADD"
	CmdDel   = "DEL"
	CmdCheck = "CHECK"
)

// Outcomes recorded in Call.Outcome.
const (
	OutcomeOK        = "ok"        // succeeded (after a hang, if there was one)
	OutcomeFail      = "fail"      // injected failure
	OutcomeHang      = "hang"      // started hanging (a second record follows)
	OutcomeAbandoned = "abandoned" // the runtime died while the call hung
)

// Rule scripts one CNI command. Fail is applied before Hang: a call either
// fails at once, or hangs (then succeeds), or succeeds.
type Rule struct {
	// Fail makes the next Fail calls fail.
	Fail int `json:"fail,omitempty"`
	// Hang makes calls sleep this long (a Go duration) before succeeding:
	// the next HangTimes calls, or every call when HangTimes is 0.
	Hang      string `json:"hang,omitempty"`
	HangTimes int    `json:"hangTimes,omitempty"`
	// Message is the error message of injected failures (default
	// "failpoint: injected <CMD> failure").
	Message string `json:"message,omitempty"`
}

// Script maps a command (CmdAdd, CmdDel, CmdCheck) to its rule.
type Script map[string]Rule

// Call is one plugin invocation as logged.
type Call struct {
	Time        time.Time `json:"time"`
	Cmd         string    `json:"cmd"`
	ContainerID string    `json:"containerID"`
	Netns       string    `json:"netns"`
	IfName      string    `json:"ifName"`
	Outcome     string    `json:"outcome"`
	PID         int       `json:"pid"`
}

// Control is a control file: the script plugins read and the log they
// write.
type Control struct {
	Path string
}

// LogPath is the call log next to the control file.
func (c Control) LogPath() string { return c.Path + ".log" }

func (c Control) lockPath() string { return c.Path + ".lock" }

// Set replaces the script (under the lock, so no call sees half of it).
// An empty script makes every call succeed.
func (c Control) Set(s Script) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return c.locked(func() error { return os.WriteFile(c.Path, b, 0o644) })
}

// Script returns the current script, with what calls have consumed.
func (c Control) Script() (Script, error) {
	var s Script
	err := c.locked(func() (err error) { s, err = c.read(); return err })
	return s, err
}

// Calls returns every logged call, oldest first.
func (c Control) Calls() ([]Call, error) {
	var out []Call
	err := c.locked(func() error {
		b, err := os.ReadFile(c.LogPath())
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var call Call
			if err := json.Unmarshal(sc.Bytes(), &call); err != nil {
				return fmt.Errorf("%s: %w", c.LogPath(), err)
			}
			out = append(out, call)
		}
		return sc.Err()
	})
	return out, err
}

// Select returns the calls of cmd (of sandbox id, unless id is ""), oldest
// first.
func Select(calls []Call, cmd, id string) []Call {
	var out []Call
	for _, c := range calls {
		if c.Cmd == cmd && (id == "" || c.ContainerID == id) {
			out = append(out, c)
		}
	}
	return out
}

// Chain returns conflist (a CNI network config list) with the plugin
// appended to its plugins, controlled by controlFile.
func Chain(conflist []byte, controlFile string) ([]byte, error) {
	var conf map[string]any
	if err := json.Unmarshal(conflist, &conf); err != nil {
		return nil, fmt.Errorf("conflist: %w", err)
	}
	plugins, ok := conf["plugins"].([]any)
	if !ok {
		return nil, errors.New("conflist: no plugins list")
	}
	conf["plugins"] = append(plugins, map[string]any{"type": PluginType, "controlFile": controlFile})
	return json.MarshalIndent(conf, "", "  ")
}

// read loads the script; the caller holds the lock.
func (c Control) read() (Script, error) {
	b, err := os.ReadFile(c.Path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return Script{}, nil
	}
	if err != nil {
		return nil, err
	}
	s := Script{}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	return s, nil
}

// appendCall logs one call; the caller holds the lock.
func (c Control) appendCall(call Call) error {
	b, err := json.Marshal(call)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(c.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// locked runs fn holding the control file's lock (flock on a separate lock
// file, shared by every plugin process and the test).
func (c Control) locked(fn func() error) error {
	f, err := os.OpenFile(c.lockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", c.lockPath(), err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing unlocks too
	return fn()
}

// Build compiles the plugin (./internal/testenv/failpoint/cmd/podhost-failpoint
// of the module at repoRoot) into dir/PluginType and returns its path.
func Build(ctx context.Context, repoRoot, dir string) (string, error) {
	out := filepath.Join(dir, PluginType)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./internal/testenv/failpoint/cmd/"+PluginType)
	cmd.Dir = repoRoot
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", PluginType, err, buf.Bytes())
	}
	return out, nil
}
