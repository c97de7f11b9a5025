package logdriver

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

// ParseArgs finds Command in args (e.g. os.Args) and decodes the argument
// that follows it.
func ParseArgs(args []string) (Config, error) {
	var cfg Config
	i := 0
	for i < len(args) && args[i] != Command {
		i++
	}
	if i+1 >= len(args) {
		return cfg, fmt.Errorf("logdriver: %q argument missing", Command)
	}
	q, err := url.ParseQuery(args[i+1])
	if err != nil {
		return cfg, fmt.Errorf("logdriver: args: %w", err)
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
