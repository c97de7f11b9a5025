package api

// The delete grace endpoint (registered by Server.EnableGrace):
//
//	POST /v1/pods/{namespace}/{name}/grace?seconds=N   200; 404 for no such pod
//
// `podhost delete --grace-period|--now|--force` posts it before removing
// the pod's document, as the kube API's DELETE with gracePeriodSeconds
// does: the pod's termination gets at most N seconds (the API server's
// deletionGracePeriodSeconds: it can only shorten the pod's own).

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Graces records the grace period of a delete that is about to remove a
// pod's document; false when no such pod runs.
type Graces interface {
	SetDeletionGrace(namespace, name string, seconds int64) bool
}

// EnableGrace registers the grace endpoint; call before Listen.
func (s *Server) EnableGrace(g Graces) {
	s.mux.HandleFunc("POST /v1/pods/{namespace}/{name}/grace", func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.ParseInt(r.URL.Query().Get("seconds"), 10, 64)
		if err != nil || secs < 0 {
			http.Error(w, "seconds: want a whole number of seconds, 0 or more", http.StatusBadRequest)
			return
		}
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		if !g.SetDeletionGrace(ns, name, secs) {
			http.Error(w, fmt.Sprintf("Error from server (NotFound): pods %q not found", name), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// SetDeletionGrace asks the daemon to terminate pod namespace/name with at
// most seconds of grace once its document is removed. An error matching
// ErrNotFound: no such pod runs; ErrDaemonDown: no daemon.
func (c *Client) SetDeletionGrace(ctx context.Context, namespace, name string, seconds int64) error {
	path := "/v1/pods/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/grace?seconds=" + strconv.FormatInt(seconds, 10)
	resp, err := c.do(ctx, http.MethodPost, path)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
