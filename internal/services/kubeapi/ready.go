package kubeapi

import (
	"net/http"
	"strings"
	"time"
)

// The optional parts of a Backend.

// sourcesReadier is a backend that knows when its lists are complete: the
// first manifest snapshot applied (before it, after a start, the pod list
// is empty or holds only resumed terminations).
type sourcesReadier interface{ SourcesReady() bool }

// podsWarner is a backend with something to tell every reader of pods (a
// containerd outage: statuses may be stale): Warning headers, as the API
// server sends warnings and kubectl prints them ("Warning: <text>").
type podsWarner interface{ PodsWarning() string }

// readyPoll bounds how long a watch waiting for the sources misses a
// readiness that did not signal a change.
const readyPoll = time.Second

// waitSourcesReady holds a watch that asked for sendInitialEvents until
// the backend's lists are complete, as the API server holds one until its
// watch cache is initialized: the initial-events-end bookmark then means
// "these are all the objects" (podhost wait chooses its pods there).
// false: the client left or the server closes first.
func (s *Server) waitSourcesReady(r *http.Request) bool {
	sr, ok := s.b.(sourcesReadier)
	if !ok {
		return true
	}
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		changed := s.b.Changed(r.Context())
		if sr.SourcesReady() {
			return true
		}
		select {
		case <-changed:
		case <-t.C:
		case <-r.Context().Done():
			return false
		case <-s.closing:
			return false
		}
	}
}

// warnPods adds the backend's warning for pod readers to w's headers.
func (s *Server) warnPods(w http.ResponseWriter, k *kind) {
	pw, ok := s.b.(podsWarner)
	if !ok || k.key != "pods" {
		return
	}
	addWarning(w, pw.PodsWarning())
}

// addWarning adds an HTTP Warning header (RFC 7234, code 299, as the
// Kubernetes API server sends warnings). Multi-line text becomes one header
// per line.
func addWarning(w http.ResponseWriter, text string) {
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "")
			w.Header().Add("Warning", `299 - "`+r.Replace(line)+`"`)
		}
	}
}
