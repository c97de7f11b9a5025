package driver

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Command is the first argument the shim passes to the driver binary. It
// runs the binary given to cio.BinaryIO as
//
//	<binary> log-driver <encoded Config>
//
// with fds 3/4 = container stdout/stderr, fd 5 = readiness pipe and an
// environment of only CONTAINER_ID and CONTAINER_NAMESPACE. The same argv
// works for cmd/podhost-log-driver and for the fallback `podhost log-driver`.
const Command = "log-driver"

// Args returns the args map for cio.BinaryIO. The shim turns the URI query
// into argv as "key value" pairs in map order (random), so all settings
// travel in ONE key: argv is always [Command, encoded].
func Args(cfg Config) map[string]string {
	q := url.Values{}
	q.Set("path", cfg.Path)
	q.Set("max-size", strconv.FormatInt(cfg.MaxSize, 10))
	q.Set("max-files", strconv.Itoa(cfg.MaxFiles))
	return map[string]string{Command: q.Encode()}
}

// ParseArgs decodes the driver's argv: exactly [binary, Command, encoded
// Config] as Args makes it. Anything else (another argv shape, a key Args
// does not write, a key given twice) is refused: the C driver
// (native/podhost-log-driver) parses the same way.
func ParseArgs(args []string) (Config, error) {
	var cfg Config
	if len(args) != 3 || args[1] != Command {
		return cfg, fmt.Errorf("logdriver: usage: <binary> %s <encoded config> (the containerd shim runs it; got %d arguments)", Command, max(len(args)-1, 0))
	}
	q, err := url.ParseQuery(args[2])
	if err != nil {
		return cfg, fmt.Errorf("logdriver: args: %w", err)
	}
	for k, vs := range q {
		switch {
		case k != "path" && k != "max-size" && k != "max-files":
			return cfg, fmt.Errorf("logdriver: args: unknown key %q (known: path, max-size, max-files)", k)
		case len(vs) > 1:
			return cfg, fmt.Errorf("logdriver: args: %s given more than once", k)
		}
	}
	cfg.Path = q.Get("path")
	if cfg.Path == "" {
		return cfg, errors.New("logdriver: args: path missing")
	}
	if v := q.Get("max-size"); v != "" {
		if cfg.MaxSize, err = strconv.ParseInt(v, 10, 64); err != nil {
			return cfg, fmt.Errorf("logdriver: args: max-size: %w", err)
		}
	}
	if v := q.Get("max-files"); v != "" {
		if cfg.MaxFiles, err = strconv.Atoi(v); err != nil {
			return cfg, fmt.Errorf("logdriver: args: max-files: %w", err)
		}
	}
	return cfg, nil
}
