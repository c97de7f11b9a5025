package failpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// Main speaks the CNI plugin protocol (CNI_COMMAND and friends from getenv,
// the network config on stdin, result or error on stdout) and returns the
// exit code. It is hand-rolled rather than skel.PluginMain because skel
// pulls in pkg/ns and with it a module podhost does not otherwise need.
func (p *Plugin) Main(getenv func(string) string, stdin io.Reader, stdout io.Writer) int {
	err := p.dispatch(getenv, stdin, stdout)
	if err == nil {
		return 0
	}
	var te *types.Error
	if !errors.As(err, &te) {
		te = types.NewError(types.ErrInternal, err.Error(), "")
	}
	if b, err := json.MarshalIndent(te, "", "    "); err == nil {
		_, _ = stdout.Write(b)
	}
	return 1
}

func (p *Plugin) dispatch(getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd := getenv("CNI_COMMAND")
	switch cmd {
	case "VERSION":
		return version.All.Encode(stdout)
	case "GC", "STATUS":
		return nil
	case CmdAdd, CmdDel, CmdCheck:
	default:
		return types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI_COMMAND %q", cmd), "")
	}
	args := &Args{ContainerID: getenv("CNI_CONTAINERID"), Netns: getenv("CNI_NETNS"), IfName: getenv("CNI_IFNAME")}
	if args.ContainerID == "" || (cmd != CmdDel && args.Netns == "") || args.IfName == "" {
		return types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_CONTAINERID, CNI_NETNS (not for DEL) and CNI_IFNAME are required", "")
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return types.NewError(types.ErrIOFailure, "read network config", err.Error())
	}
	args.StdinData = data
	out := *p
	out.Out = stdout
	return out.Run(cmd, args)
}
