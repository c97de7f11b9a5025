// Package cmdutil holds what podhost's command packages share, as
// kubectl's cmd/util does: the standard streams, kubectl's NotFound error,
// the API client that prints the daemon's warnings, and the checks of
// names and resource words typed on the command line.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// WarnTo prints a line as kubectl prints warnings: "Warning: <line>".
func WarnTo(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "Warning: %s\n", podview.EscapeTerminal(line)) }
}

// NotFoundError is kubectl's NotFound for a named object: `pods "web" not
// found`, `nodes "x" not found`. podhost prints it as kubectl does, one line each:
// `Error from server (NotFound): pods "web" not found`.
type NotFoundError struct {
	Resource string // "pods", "nodes", "configmaps", "secrets"
	Name     string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found", e.Resource, e.Name)
}

// PodNotFound turns the daemon's 404 for a missing pod into a NotFoundError
// (the daemon words it as kubectl, `pods "web" not found`; a 404 for a
// missing container is left as it is).
func PodNotFound(err error, name string) error {
	nf := &NotFoundError{Resource: "pods", Name: name}
	if errors.Is(err, api.ErrNotFound) && err.Error() == nf.Error() {
		return nf
	}
	return err
}

// NewClient returns an API client that prints the daemon's warnings (a
// containerd outage; get passes the refused manifest files of the pods it
// lists to Warn too) on stderr as kubectl does: each text once, however
// many requests it answers.
func NewClient(socket string, s IOStreams) *api.Client {
	c := api.NewClient(socket)
	var mu sync.Mutex
	printed := map[string]bool{}
	c.Warn = func(text string) {
		mu.Lock()
		defer mu.Unlock()
		if !printed[text] {
			printed[text] = true
			fmt.Fprintf(s.ErrOut, "Warning: %s\n", podview.EscapeCell(text)) // a manifest URL's error may quote what it served
		}
	}
	return c
}

// DefaultContainer is the container kubectl logs and exec use without -c
// (podview.DefaultContainer), printing kubectl's note on stderr; "" when
// the pod cannot be read (the daemon's answer to the request then says why).
func DefaultContainer(ctx context.Context, c *api.Client, namespace, name string, s IOStreams) string {
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

// ValidateNames checks a namespace and pod name given on the command line
// as the manifest decoder checks them ("" = not given).
func ValidateNames(namespace, name string) error {
	if name == "" {
		return ValidatePodNames(namespace, nil)
	}
	return ValidatePodNames(namespace, []string{name})
}

// ErrEmptyName is kubectl's error for an empty name argument (get pods "").
var ErrEmptyName = errors.New("resource name may not be empty")

// ValidatePodNames is ValidateNames for several pod names (ConfigMaps and
// Secrets: the same DNS-1123 subdomain rule); each is given, so an empty
// one is kubectl's error.
func ValidatePodNames(namespace string, names []string) error {
	if namespace != "" {
		if err := manifest.ValidateNamespace(namespace); err != nil {
			return err
		}
	}
	for _, name := range names {
		if name == "" {
			return ErrEmptyName
		}
		if err := manifest.ValidatePodName(name); err != nil {
			return err
		}
	}
	return nil
}

// UnwrapPathError drops the *fs.PathError around an OS error: for
// messages that name the path themselves.
func UnwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// DataResource returns "configmaps" or "secrets" for the names kubectl
// users type for them, "" otherwise.
func DataResource(r string) string {
	switch strings.ToLower(r) {
	case "configmaps", "configmap", "cm":
		return "configmaps"
	case "secrets", "secret":
		return "secrets"
	}
	return ""
}

// ByName returns the items of each name in turn (every item without
// names; a name given twice lists its items twice, as kubectl's) and a
// NotFoundError per name no item has.
func ByName[T any](items []T, names []string, name func(*T) string, resource string) ([]T, []error) {
	if len(names) == 0 {
		return items, nil
	}
	out := make([]T, 0, len(items))
	var missing []error
	for _, n := range names {
		found := false
		for i := range items {
			if name(&items[i]) == n {
				out, found = append(out, items[i]), true
			}
		}
		if !found {
			missing = append(missing, &NotFoundError{Resource: resource, Name: n})
		}
	}
	return out, missing
}

// KubectlHint is podhost's one line for a kubectl command (or flag, or
// output) it does not have: the kubectl command line to run instead,
// against the daemon's Kubernetes API (docs/cli/README.md, "kubectl").
func KubectlHint(what, kubectlArgs string) error {
	return fmt.Errorf("podhost has no %q: run it with kubectl against podhost's Kubernetes API: kubectl %s (kubeconfig: podhost kubeconfig)",
		what, kubectlArgs)
}

// NoResources prints kubectl get's line for an empty list: "No resources
// found in NS namespace.", or "No resources found" for every namespace
// (namespace "").
func NoResources(w io.Writer, namespace string) {
	if namespace == "" {
		fmt.Fprintln(w, "No resources found")
		return
	}
	fmt.Fprintf(w, "No resources found in %s namespace.\n", namespace)
}
