package failpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

const prevResult = `{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","mac":"aa:bb:cc:dd:ee:ff","sandbox":"/run/netns/x"}],` +
	`"ips":[{"interface":0,"address":"10.90.1.5/24","gateway":"10.90.1.1"}],"dns":{}}`

func netConf(control string, withPrev bool) string {
	c := `{"cniVersion":"1.0.0","name":"it","type":"podhost-failpoint","controlFile":"` + control + `"`
	if withPrev {
		c += `,"prevResult":` + prevResult
	}
	return c + "}"
}

// call runs the plugin in process, as the CNI protocol would.
func call(t *testing.T, p *Plugin, cmd, stdin string) (int, string) {
	t.Helper()
	env := map[string]string{"CNI_COMMAND": cmd, "CNI_CONTAINERID": "c1", "CNI_NETNS": "/run/netns/x", "CNI_IFNAME": "eth0", "CNI_PATH": "/x"}
	var out bytes.Buffer
	code := p.Main(func(k string) string { return env[k] }, strings.NewReader(stdin), &out)
	return code, out.String()
}

func newControl(t *testing.T) Control {
	return Control{Path: filepath.Join(t.TempDir(), "control.json")}
}

func outcomes(t *testing.T, c Control) string {
	t.Helper()
	calls, err := c.Calls()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cl := range calls {
		out = append(out, cl.Cmd+":"+cl.Outcome)
	}
	return strings.Join(out, " ")
}

func TestAddEchoesPrevResult(t *testing.T) {
	c := newControl(t) // no control file: succeed
	code, out := call(t, NewPlugin(nil), CmdAdd, netConf(c.Path, true))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var got current.Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.IPs) != 1 || got.IPs[0].Address.String() != "10.90.1.5/24" || len(got.Interfaces) != 1 || got.CNIVersion != "1.0.0" {
		t.Fatalf("prevResult not passed through: %s", out)
	}
	if o := outcomes(t, c); o != "ADD:ok" {
		t.Fatalf("log %q", o)
	}
}

func TestFailNTimesThenSucceed(t *testing.T) {
	c := newControl(t)
	if err := c.Set(Script{CmdAdd: {Fail: 2}, CmdDel: {Fail: 1, Message: "boom"}}); err != nil {
		t.Fatal(err)
	}
	p := NewPlugin(nil)
	for i := 0; i < 2; i++ {
		code, out := call(t, p, CmdAdd, netConf(c.Path, true))
		var e types.Error
		if code != 1 || json.Unmarshal([]byte(out), &e) != nil || e.Code != types.ErrInternal || strings.Contains(e.Msg, "not found") {
			t.Fatalf("ADD %d: exit %d, %s", i, code, out)
		}
	}
	if code, out := call(t, p, CmdAdd, netConf(c.Path, true)); code != 0 {
		t.Fatalf("third ADD: exit %d, %s", code, out)
	}
	if code, out := call(t, p, CmdDel, netConf(c.Path, false)); code != 1 || !strings.Contains(out, "boom") {
		t.Fatalf("DEL: exit %d, %s", code, out)
	}
	if code, out := call(t, p, CmdDel, netConf(c.Path, false)); code != 0 || out != "" {
		t.Fatalf("second DEL: exit %d, %q", code, out)
	}
	if o := outcomes(t, c); o != "ADD:fail ADD:fail ADD:ok DEL:fail DEL:ok" {
		t.Fatalf("log %q", o)
	}
	s, err := c.Script()
	if err != nil || s[CmdAdd].Fail != 0 || s[CmdDel].Fail != 0 {
		t.Fatalf("script not consumed: %+v %v", s, err)
	}
}

func TestHangOnceThenSucceed(t *testing.T) {
	c := newControl(t)
	if err := c.Set(Script{CmdAdd: {Hang: "100ms", HangTimes: 1}}); err != nil {
		t.Fatal(err)
	}
	p := NewPlugin(nil)
	start := time.Now()
	if code, out := call(t, p, CmdAdd, netConf(c.Path, true)); code != 0 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("hanging ADD: exit %d after %v: %s", code, time.Since(start), out)
	}
	start = time.Now()
	if code, _ := call(t, p, CmdAdd, netConf(c.Path, true)); code != 0 || time.Since(start) > 90*time.Millisecond {
		t.Fatalf("second ADD hung too (%v)", time.Since(start))
	}
	if o := outcomes(t, c); o != "ADD:hang ADD:ok ADD:ok" {
		t.Fatalf("log %q", o)
	}
}

func TestHangEndsWhenRuntimeDies(t *testing.T) {
	c := newControl(t)
	if err := c.Set(Script{CmdAdd: {Hang: "1h"}}); err != nil {
		t.Fatal(err)
	}
	var polls atomic.Int32
	p := &Plugin{Poll: time.Millisecond, ParentAlive: func() bool { return polls.Add(1) < 5 }}
	code, out := call(t, p, CmdAdd, netConf(c.Path, true))
	if code != 1 || !strings.Contains(out, "runtime went away") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if o := outcomes(t, c); o != "ADD:hang ADD:abandoned" {
		t.Fatalf("log %q", o)
	}
	if s, _ := c.Script(); s[CmdAdd].Hang != "1h" {
		t.Fatalf("hang with HangTimes 0 must stay: %+v", s)
	}
}

func TestProtocolErrors(t *testing.T) {
	c := newControl(t)
	if code, out := call(t, NewPlugin(nil), "VERSION", ""); code != 0 || !strings.Contains(out, "1.0.0") {
		t.Fatalf("VERSION: %d %s", code, out)
	}
	if code, _ := call(t, NewPlugin(nil), "BOGUS", netConf(c.Path, false)); code != 1 {
		t.Fatal("unknown command succeeded")
	}
	if code, _ := call(t, NewPlugin(nil), CmdAdd, `{"cniVersion":"1.0.0","name":"x","type":"podhost-failpoint"}`); code != 1 {
		t.Fatal("missing controlFile accepted")
	}
	if err := c.Set(Script{CmdAdd: {Hang: "soon"}}); err != nil {
		t.Fatal(err)
	}
	if code, _ := call(t, NewPlugin(nil), CmdAdd, netConf(c.Path, true)); code != 1 {
		t.Fatal("bad hang duration accepted")
	}
}

// TestBinary runs the built plugin the way libcni does.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Skip("not in the module")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := Build(ctx, strings.TrimSpace(string(root)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newControl(t)
	if err := c.Set(Script{CmdAdd: {Fail: 1}}); err != nil {
		t.Fatal(err)
	}
	run := func() (int, string) {
		cmd := exec.Command(bin)
		cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/run/netns/x", "CNI_IFNAME=eth0", "CNI_PATH=/x"}
		cmd.Stdin = strings.NewReader(netConf(c.Path, true))
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	if code, out := run(); code != 1 || !strings.Contains(out, "injected ADD failure") {
		t.Fatalf("first run: %d %s", code, out)
	}
	if code, out := run(); code != 0 || !strings.Contains(out, "10.90.1.5/24") {
		t.Fatalf("second run: %d %s", code, out)
	}
}

func TestChainAndSelect(t *testing.T) {
	out, err := Chain([]byte(`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"}]}`), "/c.json")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(out, &conf); err != nil || conf.Name != "n" || len(conf.Plugins) != 2 ||
		conf.Plugins[1]["type"] != PluginType || conf.Plugins[1]["controlFile"] != "/c.json" {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := Chain([]byte(`{"name":"n","type":"bridge"}`), "/c.json"); err == nil {
		t.Fatal("a single-plugin config was accepted")
	}
	calls := []Call{{Cmd: CmdAdd, ContainerID: "a"}, {Cmd: CmdDel, ContainerID: "a"}, {Cmd: CmdAdd, ContainerID: "b"}}
	if got := Select(calls, CmdAdd, ""); len(got) != 2 {
		t.Fatalf("Select ADD: %+v", got)
	}
	if got := Select(calls, CmdAdd, "b"); len(got) != 1 || got[0].ContainerID != "b" {
		t.Fatalf("Select ADD b: %+v", got)
	}
}
