package kubeletapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

type fakeAuthn struct{}

func (fakeAuthn) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer alice":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	case "Bearer bob":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "bob"}}, true, nil
	}
	return nil, false, nil
}

// fakeAuthz allows alice everything, bob only nodes/pods.
type fakeAuthz struct{}

func (fakeAuthz) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "alice" || a.GetSubresource() == "pods" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

type fakeBackend struct{ pods []*corev1.Pod }

func (b fakeBackend) Pods(context.Context) ([]*corev1.Pod, error) { return b.pods, nil }
func (b fakeBackend) Node(context.Context) (*corev1.Node, error)  { return &corev1.Node{}, nil }

func newTestServer(t *testing.T) (*httptest.Server, chan *http.Request) {
	daemonSaw := make(chan *http.Request, 10)
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		daemonSaw <- r
		_, _ = io.WriteString(w, "from the daemon")
	}))
	t.Cleanup(daemon.Close)
	daemonURL, _ := url.Parse(daemon.URL)
	tr := &http.Transport{Proxy: http.ProxyURL(daemonURL)} // every request to the daemon goes to the fake
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}}
	s := New(Options{NodeName: "box-1", Auth: &Auth{authn: fakeAuthn{}, authz: fakeAuthz{}},
		Backend: fakeBackend{pods: []*corev1.Pod{pod}}, Daemon: tr})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, daemonSaw
}

func TestHandler(t *testing.T) {
	srv, daemonSaw := newTestServer(t)
	for _, tc := range []struct {
		name, method, path, token string
		code                      int
		body                      string
		daemonPath, daemonQuery   string
		reqBody                   string
	}{
		{name: "no credentials", method: "GET", path: "/pods", code: 401, body: "Unauthorized"},
		{name: "unknown path, no credentials", method: "GET", path: "/nothing", code: 401, body: "Unauthorized"},
		{name: "not allowed", method: "POST", path: "/exec/default/web/app?command=sh", token: "bob", code: 403,
			body: "Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[proxy])\n"},
		{name: "pods by nodes/pods", method: "GET", path: "/pods", token: "bob", code: 200},
		{name: "unknown path", method: "GET", path: "/run/default/web/app", token: "alice", code: 404},
		{name: "healthz", method: "GET", path: "/healthz", token: "alice", code: 200, body: "ok"},
		{name: "logs", method: "GET", path: "/containerLogs/default/web/app?follow=true&tailLines=2", token: "alice", code: 200,
			body: "from the daemon", daemonPath: "/api/v1/namespaces/default/pods/web/log", daemonQuery: "container=app&follow=true&tailLines=2"},
		{name: "exec with the pod's uid", method: "POST", path: "/exec/default/web/uid-1/app?command=id&output=1", token: "alice", code: 200,
			body: "from the daemon", daemonPath: "/api/v1/namespaces/default/pods/web/exec", daemonQuery: "command=id&container=app&stdout=true"},
		{name: "exec with another uid", method: "POST", path: "/exec/default/web/uid-2/app?command=id", token: "alice", code: 404},
		{name: "portForward of a pod that is not there, by uid", method: "POST", path: "/portForward/default/gone/uid-1", token: "alice", code: 404},
		{name: "bad namespace", method: "GET", path: "/containerLogs/Default/web/app", token: "alice", code: 400},
		{name: "escaped slash", method: "GET", path: "/containerLogs/default/we%2Fb/app", token: "alice", code: 400},
		{name: "a body", method: "POST", path: "/exec/default/web/app?command=id", token: "alice", code: 413, reqBody: "x"},
		{name: "stats off without a source", method: "GET", path: "/stats/summary", token: "alice", code: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.reqBody != "" {
				body = strings.NewReader(tc.reqBody)
			}
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, body)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			req.Header.Set("Impersonate-User", "system:admin")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || tc.body != "" && string(got) != tc.body {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, got, tc.code, tc.body)
			}
			if tc.daemonPath == "" {
				select {
				case r := <-daemonSaw:
					t.Fatalf("the daemon got %s", r.URL)
				default:
				}
				return
			}
			r := <-daemonSaw
			if r.URL.Path != tc.daemonPath || r.URL.RawQuery != tc.daemonQuery || r.Header.Get("Authorization") != "" || r.Header.Get("Impersonate-User") != "" {
				t.Errorf("the daemon got %s?%s (Authorization %q), want %s?%s", r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), tc.daemonPath, tc.daemonQuery)
			}
		})
	}
}

func TestPodsIsAPodList(t *testing.T) {
	srv, _ := newTestServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/pods", nil)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l corev1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "PodList" || len(l.Items) != 1 || l.Items[0].UID != "uid-1" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("got %+v", l)
	}
}

type fakeStats struct{}

func (fakeStats) Summary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: "box-1"}}, nil
}

// /stats/summary and /metrics/resource come from the StatsSource.
func TestStats(t *testing.T) {
	s := New(Options{NodeName: "box-1", Auth: &Auth{authn: fakeAuthn{}, authz: fakeAuthz{}}, Backend: fakeBackend{}, Stats: fakeStats{}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for path, want := range map[string]string{"/stats/summary": `"nodeName":"box-1"`, "/metrics/resource": "resource_scrape_error 0\n"} {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
}

// The API server names a pod, not a uid: a request reaches the daemon's
// pod only when the cluster's pod of that name is it (same UID, a pod from
// the API server) or its mirror pod (the config hash); a pod someone made
// in the cluster with a static pod's name (its mirror pod refused or
// deleted) does not reach the static pod.
func TestClusterPodOfTheName(t *testing.T) {
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "from the daemon")
	}))
	defer daemon.Close()
	daemonURL, _ := url.Parse(daemon.URL)
	static := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "static", UID: "local-1",
		Annotations: map[string]string{"podhost.io/config-hash": "h1"}}}
	fromAPI := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api", UID: "cluster-2"}}
	alone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alone", UID: "local-3"}}
	inCluster := map[string]*corev1.Pod{}
	known := true
	s := New(Options{NodeName: "box-1", Auth: &Auth{authn: fakeAuthn{}, authz: fakeAuthz{}},
		Backend: fakeBackend{pods: []*corev1.Pod{static, fromAPI, alone}}, Daemon: &http.Transport{Proxy: http.ProxyURL(daemonURL)},
		ClusterPod: func(ns, name string) (*corev1.Pod, bool) { return inCluster[ns+"/"+name], known }})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	mirror := func(hash string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "static", UID: "mirror-1",
			Annotations: map[string]string{corev1.MirrorPodAnnotationKey: hash}}}
	}
	impostor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "static", UID: "cluster-9"}}
	for _, tc := range []struct {
		name      string
		path      string
		inCluster *corev1.Pod
		known     bool
		code      int
	}{
		{"the static pod through its mirror pod", "/exec/default/static/app?command=id", mirror("h1"), true, 200},
		{"another pod of the static pod's name", "/exec/default/static/app?command=id", impostor, true, 404},
		{"its logs", "/containerLogs/default/static/app", impostor, true, 404},
		{"its port-forward", "/portForward/default/static", impostor, true, 404},
		{"a mirror pod of another hash", "/attach/default/static/app", mirror("h0"), true, 404},
		{"the pod from the API server", "/exec/default/api/app?command=id", fromAPI, true, 200},
		{"a pod the cluster does not hold", "/exec/default/alone/app?command=id", nil, true, 200},
		{"the cluster's pods not known yet", "/exec/default/static/app?command=id", mirror("h1"), false, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inCluster = map[string]*corev1.Pod{}
			if tc.inCluster != nil {
				inCluster["default/"+tc.inCluster.Name] = tc.inCluster
			}
			known = tc.known
			req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
			req.Header.Set("Authorization", "Bearer alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %q, want %d", resp.StatusCode, got, tc.code)
			}
		})
	}
}
