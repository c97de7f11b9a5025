package api

// Rollout endpoints (registered by Server.EnableRollout):
//
//	GET  /v1/pods/{namespace}/{name}/rollout/history   []RolloutRevision, oldest first
//	POST /v1/pods/{namespace}/{name}/rollout/undo      RolloutUndoResult: the previous
//	                                                   revision runs until the manifest changes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// RolloutRevision is one version of a pod (podhost rollout history).
type RolloutRevision struct {
	Revision int       `json:"revision"`
	UID      types.UID `json:"uid"`
	Hash     string    `json:"hash"`
	Source   string    `json:"source"`
	Time     time.Time `json:"time"` // first seen
	Outcome  string    `json:"outcome"`
	Reason   string    `json:"reason,omitempty"`
	Running  bool      `json:"running,omitempty"`
}

// RolloutUndoResult is the answer to an undo.
type RolloutUndoResult struct {
	Revision int `json:"revision"` // the revision brought back
}

// Rollouts is what the rollout endpoints need (internal/desired/rollout). Errors
// matching ErrNotFound are reported as such.
type Rollouts interface {
	History(namespace, name string) ([]RolloutRevision, error)
	Undo(namespace, name string) (int, error)
}

// EnableRollout registers the rollout endpoints; call before Listen.
func (s *Server) EnableRollout(ro Rollouts) {
	s.mux.HandleFunc("GET /v1/pods/{namespace}/{name}/rollout/history", func(w http.ResponseWriter, r *http.Request) {
		h, err := ro.History(r.PathValue("namespace"), r.PathValue("name"))
		if rolloutError(w, err) {
			return
		}
		writeJSON(w, h)
	})
	s.mux.HandleFunc("POST /v1/pods/{namespace}/{name}/rollout/undo", func(w http.ResponseWriter, r *http.Request) {
		n, err := ro.Undo(r.PathValue("namespace"), r.PathValue("name"))
		if rolloutError(w, err) {
			return
		}
		writeJSON(w, RolloutUndoResult{Revision: n})
	})
}

// rolloutError writes err (404 for ErrNotFound, else 400: the request
// cannot be honoured as asked); false when err is nil.
func rolloutError(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	default:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	return true
}

func rolloutPath(namespace, name, op string) string {
	return "/v1/pods/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/rollout/" + op
}

// RolloutHistory returns the last versions of a pod, oldest first.
func (c *Client) RolloutHistory(ctx context.Context, namespace, name string) ([]RolloutRevision, error) {
	var out []RolloutRevision
	return out, c.getJSON(ctx, rolloutPath(namespace, name, "history"), &out)
}

// RolloutUndo brings back the revision before the running one and returns
// its number.
func (c *Client) RolloutUndo(ctx context.Context, namespace, name string) (int, error) {
	resp, err := c.do(ctx, http.MethodPost, rolloutPath(namespace, name, "undo"))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var res RolloutUndoResult
	return res.Revision, json.NewDecoder(resp.Body).Decode(&res)
}
