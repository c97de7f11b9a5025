package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/podview"
)

// LogsOptions select a container log.
type LogsOptions struct {
	Socket, Namespace, Name, Container string
	Follow, Previous, Timestamps       bool
	Tail                               int
	// Since (--since) and SinceTime (--since-time, RFC 3339) select the
	// messages logged after a moment; at most one of them.
	Since     time.Duration
	SinceTime string
}

// Logs prints a container's log through the daemon.
func Logs(ctx context.Context, o LogsOptions, s IOStreams) error {
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	req := api.LogRequest{Namespace: o.Namespace, Name: o.Name, Container: o.Container,
		Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps, Tail: o.Tail}
	since, err := logsSince(o, time.Now())
	if err != nil {
		return err
	}
	req.Since = since
	c := api.NewClient(o.Socket)
	if req.Container == "" {
		req.Container = defaultContainer(ctx, c, o.Namespace, o.Name, s)
	}
	return c.Logs(ctx, req, s.Out)
}

// defaultContainer is the container kubectl would pick in the pod, after
// printing its "Defaulted container" note on stderr; "" when the pod cannot
// be read (the daemon then answers the request with the reason).
func defaultContainer(ctx context.Context, c *api.Client, namespace, name string, s IOStreams) string {
	p, err := c.GetPod(ctx, namespace, name)
	if err != nil {
		return ""
	}
	container, note := podview.DefaultContainer(p)
	if note != "" {
		fmt.Fprintln(s.ErrOut, note)
	}
	return container
}

// logsSince resolves --since / --since-time to a moment (zero: none).
func logsSince(o LogsOptions, now time.Time) (time.Time, error) {
	switch {
	case o.Since != 0 && o.SinceTime != "":
		return time.Time{}, errors.New("at most one of --since-time or --since may be specified")
	case o.Since < 0:
		return time.Time{}, errors.New("--since must be greater than 0")
	case o.Since > 0:
		return now.Add(-o.Since), nil
	case o.SinceTime != "":
		t, err := time.Parse(time.RFC3339, o.SinceTime)
		if err != nil {
			return time.Time{}, fmt.Errorf("--since-time: want an RFC 3339 time: %w", err)
		}
		return t, nil
	}
	return time.Time{}, nil
}

