package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/manifest"
	"github.com/podhost/podhost/internal/podview"
)

// GetOptions select pods for get and describe.
type GetOptions struct {
	Socket    string
	Namespace string // "" = all (get); describe defaults to "default"
	Name      string
	Output    string // "", wide, json, yaml, name
}

// CheckResource accepts the resource names kubectl users type for pods.
func CheckResource(r string) error {
	switch r {
	case "pods", "pod", "po":
		return nil
	}
	return fmt.Errorf("the server doesn't have a resource type %q (podhost serves pods)", r)
}

// Get prints pods as a table, JSON (a core/v1 PodList), YAML or names.
func Get(ctx context.Context, o GetOptions, s IOStreams) error {
	switch o.Output {
	case "", "wide", "json", "yaml", "name":
	default:
		return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,name,wide,yaml", o.Output)
	}
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	c := newClient(o.Socket, s)
	list, err := c.ListPods(ctx)
	if err != nil {
		return err
	}
	pods := filterPods(list.Items, o.Namespace, o.Name)
	if o.Name != "" && len(pods) == 0 {
		return fmt.Errorf("pods %q not found", o.Name)
	}
	switch o.Output {
	case "json", "yaml":
		var v any = &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: pods}
		if o.Name != "" {
			v = &pods[0]
		}
		return printObject(s, v, o.Output)
	case "name":
		podview.Names(s.Out, pods)
		return nil
	}
	if len(pods) == 0 {
		fmt.Fprintln(s.ErrOut, "No resources found")
		return nil
	}
	return podview.Table(s.Out, pods, o.Output == "wide", time.Now())
}

func filterPods(in []corev1.Pod, ns, name string) []corev1.Pod {
	out := []corev1.Pod{}
	for _, p := range in {
		if (ns == "" || p.Namespace == ns) && (name == "" || p.Name == name) {
			out = append(out, p)
		}
	}
	return out
}

func printObject(s IOStreams, v any, format string) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(b)
		return err
	}
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}

// Describe prints one pod's details and events.
func Describe(ctx context.Context, o GetOptions, s IOStreams) error {
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	c := newClient(o.Socket, s)
	p, err := c.GetPod(ctx, o.Namespace, o.Name)
	if errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("pods %q not found", o.Name)
	}
	if err != nil {
		return err
	}
	evs, err := c.Events(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	view := make([]podview.Event, 0, len(evs))
	for _, e := range evs {
		view = append(view, podview.Event{Time: e.Time, Type: e.Type, Reason: e.Reason, Message: e.Message})
	}
	rs, err := c.Runtime(ctx)
	if err != nil {
		return err
	}
	return podview.Describe(s.Out, p, view, rs.LastConfirmed, time.Now())
}

// LogsOptions select a container log.
type LogsOptions struct {
	Socket, Namespace, Name, Container string
	Follow, Previous, Timestamps       bool
	Tail                               int
}

// Logs prints a container's log through the daemon.
func Logs(ctx context.Context, o LogsOptions, s IOStreams) error {
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	req := api.LogRequest{Namespace: o.Namespace, Name: o.Name, Container: o.Container,
		Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps, Tail: o.Tail}
	return api.NewClient(o.Socket).Logs(ctx, req, s.Out)
}

// newClient returns an API client that prints the daemon's warnings (refused
// manifest files, a containerd outage) on stderr as kubectl does.
func newClient(socket string, s IOStreams) *api.Client {
	c := api.NewClient(socket)
	c.Warn = func(text string) { fmt.Fprintf(s.ErrOut, "Warning: %s\n", text) }
	return c
}

// validateNames checks a namespace and pod name given on the command line
// as the manifest decoder checks them ("" = not given).
func validateNames(namespace, name string) error {
	if namespace != "" {
		if err := manifest.ValidateNamespace(namespace); err != nil {
			return err
		}
	}
	if name != "" {
		return manifest.ValidatePodName(name)
	}
	return nil
}
