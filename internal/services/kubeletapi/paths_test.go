package kubeletapi

import (
	"net/url"
	"testing"
)

func TestMapPaths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       func() (*target, error)
		path    string
		query   string
		uid     string
		wantErr bool
	}{
		{name: "logs", m: func() (*target, error) {
			return mapLog("default", "web", "app", url.Values{"follow": {"true"}, "tailLines": {"5"}, "sinceTime": {"2026-01-01T00:00:00Z"}, "other": {"x"}})
		}, path: "/api/v1/namespaces/default/pods/web/log", query: "container=app&follow=true&sinceTime=2026-01-01T00%3A00%3A00Z&tailLines=5"},
		{name: "logs, old tail", m: func() (*target, error) { return mapLog("default", "web", "app", url.Values{"tail": {"3"}}) },
			path: "/api/v1/namespaces/default/pods/web/log", query: "container=app&tailLines=3"},
		{name: "logs, tail all", m: func() (*target, error) { return mapLog("default", "web", "app", url.Values{"tail": {"all"}}) },
			path: "/api/v1/namespaces/default/pods/web/log", query: "container=app"},
		{name: "exec as the API server sends it", m: func() (*target, error) {
			return mapStream("exec", "kube-system", "web.1", "", "app", url.Values{"command": {"cat", "/etc/hostname"}, "input": {"1"}, "output": {"1"}, "error": {"1"}})
		}, path: "/api/v1/namespaces/kube-system/pods/web.1/exec", query: "command=cat&command=%2Fetc%2Fhostname&container=app&stderr=true&stdin=true&stdout=true"},
		{name: "exec with a uid and a tty", m: func() (*target, error) {
			return mapStream("exec", "default", "web", "1234", "app", url.Values{"command": {"sh"}, "tty": {"1"}, "input": {"0"}})
		}, path: "/api/v1/namespaces/default/pods/web/exec", query: "command=sh&container=app&tty=true", uid: "1234"},
		{name: "exec without a command", m: func() (*target, error) { return mapStream("exec", "default", "web", "", "app", url.Values{}) }, wantErr: true},
		{name: "attach", m: func() (*target, error) {
			return mapStream("attach", "default", "web", "", "app", url.Values{"output": {"1"}, "command": {"ignored"}})
		}, path: "/api/v1/namespaces/default/pods/web/attach", query: "container=app&stdout=true"},
		{name: "portForward", m: func() (*target, error) { return mapPortForward("default", "web", "", url.Values{"port": {"80,8080"}}) },
			path: "/api/v1/namespaces/default/pods/web/portforward", query: "ports=80%2C8080"},
		{name: "portForward with uid", m: func() (*target, error) { return mapPortForward("default", "web", "u1", url.Values{}) },
			path: "/api/v1/namespaces/default/pods/web/portforward", uid: "u1"},
		{name: "traversal in the namespace", m: func() (*target, error) { return mapLog("..", "web", "app", nil) }, wantErr: true},
		{name: "a slash in the pod", m: func() (*target, error) { return mapLog("default", "a/../../x", "app", nil) }, wantErr: true},
		{name: "query in the container", m: func() (*target, error) {
			return mapStream("exec", "default", "web", "", "app?x=1", url.Values{"command": {"sh"}})
		}, wantErr: true},
		{name: "upper case namespace", m: func() (*target, error) { return mapPortForward("Default", "web", "", nil) }, wantErr: true},
		{name: "empty pod", m: func() (*target, error) { return mapPortForward("default", "", "", nil) }, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.m()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("mapped to %s?%s, want an error", got.path(), got.query.Encode())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.path() != tc.path || got.query.Encode() != tc.query || string(got.uid) != tc.uid {
				t.Errorf("got %s?%s uid %q, want %s?%s uid %q", got.path(), got.query.Encode(), got.uid, tc.path, tc.query, tc.uid)
			}
		})
	}
}
