package kubeletapi

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// target is where a kubelet API request goes in the daemon's Kubernetes
// API: a pod subresource.
type target struct {
	namespace, pod string
	uid            types.UID // "" unless the kubelet path named one
	// subresource: log, exec, attach or portforward.
	subresource string
	// query is what the daemon's PodLogOptions, PodExecOptions,
	// PodAttachOptions or PodPortForwardOptions decode.
	query url.Values
}

// path is the daemon's path for t.
func (t *target) path() string {
	return "/api/v1/namespaces/" + t.namespace + "/pods/" + t.pod + "/" + t.subresource
}

// logParams are the kubelet's containerLogs query parameters
// (PodLogOptions as the API server's LogLocation sends them).
var logParams = []string{"follow", "previous", "tailLines", "limitBytes", "sinceSeconds", "sinceTime", "timestamps", "stream"}

// streamParams maps the API server's stream parameters (streamParams in
// pkg/registry/core/pod/strategy.go: input, output, error, tty, command;
// port) to the fields of the daemon's options.
var streamParams = map[string]string{"input": "stdin", "output": "stdout", "error": "stderr", "tty": "tty"}

// mapLog maps /containerLogs/{ns}/{pod}/{container}.
func mapLog(ns, pod, container string, q url.Values) (*target, error) {
	if err := checkNames(ns, pod, container); err != nil {
		return nil, err
	}
	out := url.Values{"container": {container}}
	if tail := q.Get("tail"); tail != "" && tail != "all" && !q.Has("tailLines") {
		out.Set("tailLines", tail) // the kubelet's older name
	}
	for _, k := range logParams {
		if v, ok := q[k]; ok {
			out[k] = v
		}
	}
	return &target{namespace: ns, pod: pod, subresource: "log", query: out}, nil
}

// mapStream maps /exec and /attach (subresource exec or attach) with
// or without a uid.
func mapStream(subresource, ns, pod, uid, container string, q url.Values) (*target, error) {
	if err := checkNames(ns, pod, container); err != nil {
		return nil, err
	}
	out := url.Values{"container": {container}}
	for from, to := range streamParams {
		if v := q.Get(from); v != "" && v != "0" && v != "false" {
			out.Set(to, "true")
		}
	}
	if subresource == "exec" {
		if len(q["command"]) == 0 {
			return nil, fmt.Errorf("no command given")
		}
		out["command"] = q["command"]
	}
	return &target{namespace: ns, pod: pod, uid: types.UID(uid), subresource: subresource, query: out}, nil
}

// mapPortForward maps /portForward/{ns}/{pod}[/{uid}] (port: the API
// server's PortHeader, comma-separated).
func mapPortForward(ns, pod, uid string, q url.Values) (*target, error) {
	if err := checkNames(ns, pod, ""); err != nil {
		return nil, err
	}
	out := url.Values{}
	if v, ok := q["port"]; ok {
		out["ports"] = v
	}
	return &target{namespace: ns, pod: pod, uid: types.UID(uid), subresource: "portforward", query: out}, nil
}

// checkNames: a namespace is a DNS label, a pod name a DNS subdomain, a
// container name a DNS label (as the API server validates them): nothing
// else reaches the daemon's paths.
func checkNames(ns, pod, container string) error {
	var msgs []string
	msgs = append(msgs, prefixed("namespace", validation.IsDNS1123Label(ns))...)
	msgs = append(msgs, prefixed("pod", validation.IsDNS1123Subdomain(pod))...)
	if container != "" {
		msgs = append(msgs, prefixed("container", validation.IsDNS1123Label(container))...)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func prefixed(what string, msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = what + ": " + m
	}
	return msgs
}
