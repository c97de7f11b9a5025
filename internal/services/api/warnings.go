package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// RuntimeStatus is containerd's health as the daemon last probed it
// (GET /v1/runtime).
type RuntimeStatus struct {
	Address string    `json:"address"`
	Healthy bool      `json:"healthy"`
	Since   time.Time `json:"since,omitzero"` // start of the current outage
	Error   string    `json:"error,omitempty"`
	// LastConfirmed is when containerd last answered: pod statuses reflect
	// the runtime as of then.
	LastConfirmed time.Time `json:"lastConfirmed,omitzero"`
	// StateDB: whether the state db's last write committed (a full state
	// dir fails every write; running pods are untouched, new ones wait).
	StateDB StateDBStatus `json:"stateDB"`
}

// StateDBStatus is the state db's write health.
type StateDBStatus struct {
	Path    string    `json:"path"`
	Healthy bool      `json:"healthy"`
	Since   time.Time `json:"since,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// Warning is the line `get pods` prints while containerd is unreachable, ""
// while it is healthy.
func (r RuntimeStatus) Warning() string {
	var lines []string
	if !r.Healthy {
		lines = append(lines, fmt.Sprintf("containerd at %s is unreachable since %s: %s; statuses may be stale",
			r.Address, r.Since.Format(time.RFC3339), r.Error))
	}
	if db := r.StateDB; db.Path != "" && !db.Healthy {
		lines = append(lines, fmt.Sprintf("state %s cannot be written since %s: %s; running pods are untouched, new pods wait",
			db.Path, db.Since.Format(time.RFC3339), db.Error))
	}
	return strings.Join(lines, "\n")
}

// parseWarning returns the text of a `299 - "text"` header value, or the
// raw value when it is not in that form.
func parseWarning(v string) string {
	rest, ok := strings.CutPrefix(v, `299 - "`)
	if !ok {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '\\' && i+1 < len(rest):
			i++
			b.WriteByte(rest[i])
		case c == '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// validatePodPaths answers 400 for /v1/pods/{namespace}/{name}... paths
// whose namespace or name the manifest decoder would refuse, before the
// mux routes them (it would clean "/v1/pods/../web" into a redirect).
func validatePodPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/pods/")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		segs := strings.SplitN(rest, "/", 3)
		var err error
		if ns, uerr := url.PathUnescape(segs[0]); uerr != nil {
			err = fmt.Errorf("invalid namespace %q: %w", segs[0], uerr)
		} else {
			err = manifest.ValidateNamespace(ns)
		}
		if err == nil && len(segs) > 1 {
			if name, uerr := url.PathUnescape(segs[1]); uerr != nil {
				err = fmt.Errorf("invalid pod name %q: %w", segs[1], uerr)
			} else {
				err = manifest.ValidatePodName(name)
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
