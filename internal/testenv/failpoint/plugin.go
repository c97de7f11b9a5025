package failpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// NetConf is the plugin's network config.
type NetConf struct {
	types.PluginConf
	// ControlFile is the script's path (see Control).
	ControlFile string `json:"controlFile"`
}

// Plugin runs CNI commands against a control file. The zero value is not
// usable: use NewPlugin.
type Plugin struct {
	// Out receives the result of a successful ADD.
	Out io.Writer
	// ParentAlive reports whether the runtime that ran the plugin still
	// runs; a hang ends early (failing) when it does not.
	ParentAlive func() bool
	// Poll is how often a hang checks ParentAlive.
	Poll time.Duration
}

// NewPlugin returns a Plugin printing to out whose runtime is the parent
// process: when the parent dies the plugin is re-parented, and its parent
// PID changes.
func NewPlugin(out io.Writer) *Plugin {
	ppid := os.Getppid()
	return &Plugin{Out: out, Poll: 20 * time.Millisecond, ParentAlive: func() bool { return os.Getppid() == ppid }}
}

// decision is what the script says one call does.
type decision struct {
	outcome string // OutcomeOK, OutcomeFail or OutcomeHang
	hang    time.Duration
	message string
}

// Args are a call's arguments (from CNI_* variables and stdin).
type Args struct {
	ContainerID, Netns, IfName string
	StdinData                  []byte
}

// Run executes cmd (CmdAdd, CmdDel, CmdCheck) as the script says.
func (p *Plugin) Run(cmd string, args *Args) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, err.Error(), "")
	}
	if conf.ControlFile == "" {
		return types.NewError(types.ErrInvalidNetworkConfig, "failpoint: controlFile is required", "")
	}
	ctl := Control{Path: conf.ControlFile}
	call := Call{Cmd: cmd, ContainerID: args.ContainerID, Netns: args.Netns, IfName: args.IfName, PID: os.Getpid()}
	d, err := ctl.consume(call)
	if err != nil {
		return types.NewError(types.ErrInternal, "failpoint: "+err.Error(), "")
	}
	switch d.outcome {
	case OutcomeFail:
		return types.NewError(types.ErrInternal, d.message, "")
	case OutcomeHang:
		outcome := OutcomeOK
		if !p.sleep(d.hang) {
			outcome = OutcomeAbandoned
		}
		call.Outcome = outcome
		if err := ctl.log(call); err != nil {
			return types.NewError(types.ErrInternal, "failpoint: "+err.Error(), "")
		}
		if outcome == OutcomeAbandoned {
			return types.NewError(types.ErrInternal, "failpoint: runtime went away during a hang", "")
		}
	}
	if cmd == CmdAdd {
		return p.echo(conf)
	}
	return nil
}

// echo prints prevResult (in the config's version), as a chained plugin
// that changes nothing must; an empty result when there is none.
func (p *Plugin) echo(conf *NetConf) error {
	if conf.PrevResult == nil {
		return (&current.Result{CNIVersion: conf.CNIVersion}).PrintTo(p.Out)
	}
	res, err := conf.PrevResult.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, "failpoint: convert prevResult", err.Error())
	}
	return res.PrintTo(p.Out)
}

// sleep waits d, checking that the runtime still runs; false if it died.
func (p *Plugin) sleep(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !p.ParentAlive() {
			return false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		time.Sleep(min(left, p.Poll))
	}
}

func parseConf(data []byte) (*NetConf, error) {
	conf := &NetConf{}
	if err := json.Unmarshal(data, conf); err != nil {
		return nil, fmt.Errorf("failpoint: parse network config: %w", err)
	}
	if err := version.ParsePrevResult(&conf.PluginConf); err != nil {
		return nil, fmt.Errorf("failpoint: parse prevResult: %w", err)
	}
	return conf, nil
}

// consume decides what call does, takes it off the script and logs it, all
// under the lock.
func (c Control) consume(call Call) (decision, error) {
	var d decision
	err := c.locked(func() error {
		s, err := c.read()
		if err != nil {
			return err
		}
		rule, ok := s[call.Cmd]
		if d, err = decide(&rule, call.Cmd); err != nil {
			return err
		}
		if ok {
			s[call.Cmd] = rule
			b, err := json.Marshal(s)
			if err != nil {
				return err
			}
			if err := os.WriteFile(c.Path, b, 0o644); err != nil {
				return err
			}
		}
		call.Time, call.Outcome = time.Now(), d.outcome
		return c.appendCall(call)
	})
	return d, err
}

// decide applies rule to one call of cmd and consumes it.
func decide(rule *Rule, cmd string) (decision, error) {
	switch {
	case rule.Fail > 0:
		rule.Fail--
		msg := rule.Message
		if msg == "" {
			msg = "failpoint: injected " + cmd + " failure"
		}
		return decision{outcome: OutcomeFail, message: msg}, nil
	case rule.Hang != "":
		d, err := time.ParseDuration(rule.Hang)
		if err != nil {
			return decision{}, fmt.Errorf("%s hang: %w", cmd, err)
		}
		switch {
		case rule.HangTimes == 1:
			rule.Hang, rule.HangTimes = "", 0
		case rule.HangTimes > 1:
			rule.HangTimes--
		}
		return decision{outcome: OutcomeHang, hang: d}, nil
	}
	return decision{outcome: OutcomeOK}, nil
}

// log appends a call under the lock.
func (c Control) log(call Call) error {
	call.Time = time.Now()
	return c.locked(func() error { return c.appendCall(call) })
}
