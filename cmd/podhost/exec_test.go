package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// execBackend answers exec like a shell would for `sh -c 'exit N'`, and
// echoes stdin for cat, in pods default/web and ns/web.
type execBackend struct {
	*clienttest.FakeDaemon
	got chan api.ExecRequest
}

func (b execBackend) Exec(_ context.Context, pod *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, _ io.WriteCloser, tty bool, _ <-chan stream.TerminalSize) (int, error) {
	b.got <- api.ExecRequest{Namespace: pod.Namespace, Name: pod.Name, Container: container, Command: cmd, Stdin: stdin != nil, TTY: tty}
	if stdin != nil {
		_, err := io.Copy(stdout, stdin)
		return 0, err
	}
	var code int
	_, _ = fmt.Sscanf(cmd[len(cmd)-1], "exit %d", &code)
	return code, nil
}

// execPod is a Running pod web with running containers.
func execPod(namespace string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.Status.Phase = namespace, "web", corev1.PodRunning
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "img"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

func TestExec(t *testing.T) {
	e := newTestEnv(t)
	b := execBackend{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{execPod("default", "c"), execPod("ns", "c", "side")},
		RuntimeStatus: api.RuntimeStatus{Healthy: true}}, got: make(chan api.ExecRequest, 1)}
	sock := clienttest.Serve(t, b)
	for _, tc := range []struct {
		stdin          string
		args           []string
		code           int
		stdout, stderr string
		req            *api.ExecRequest
	}{
		{args: []string{"exec", "web", "--", "sh", "-c", "exit 3"}, code: 3, stderr: "command terminated with exit code 3\n",
			req: &api.ExecRequest{Namespace: "default", Name: "web", Container: "c", Command: []string{"sh", "-c", "exit 3"}}},
		// -t without -i: no TTY, as kubectl's SetupTTY
		{args: []string{"exec", "web", "-n", "ns", "-c", "side", "-t", "--", "sh", "-c", "exit 0"},
			req: &api.ExecRequest{Namespace: "ns", Name: "web", Container: "side", Command: []string{"sh", "-c", "exit 0"}}},
		// -it with stdin not a terminal: kubectl's warning, no TTY, the input passed
		{stdin: "piped", args: []string{"exec", "-it", "web", "--", "cat"}, stdout: "piped",
			stderr: "Unable to use a TTY - input is not a terminal or the right kind of file\n",
			req:    &api.ExecRequest{Namespace: "default", Name: "web", Container: "c", Stdin: true, Command: []string{"cat"}}},
		{stdin: "abc", args: []string{"exec", "-i", "web", "--", "cat"}, stdout: "abc"},
		{args: []string{"exec", "nope", "--", "true"}, code: 1, stderr: "Error from server (NotFound): pods \"nope\" not found\n"},
		{args: []string{"exec", "pod/nope", "--", "true"}, code: 1, stderr: "Error from server (NotFound): pods \"nope\" not found\n"},
		{args: []string{"exec", "web", "true"}, code: 1, stderr: "use exec NAME -- COMMAND"},
		{args: []string{"exec", "web", "x", "--", "true"}, code: 1, stderr: "exactly one pod NAME"},
		{args: []string{"exec", "web"}, code: 1, stderr: "Error: you must specify at least one command for the container\n"},
		{args: []string{"exec", "-n", "..", "web", "--", "true"}, code: 1,
			stderr: "Error: invalid namespace \"..\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n"},
	} {
		code, stdout, stderr := e.podhost(t, tc.stdin, append([]string{"--socket", sock}, tc.args...)...)
		if code != tc.code || stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) || (tc.stderr == "" && stderr != "") {
			t.Errorf("podhost %v: code %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
		select {
		case got := <-b.got:
			if tc.req != nil && !reflect.DeepEqual(got, *tc.req) {
				t.Errorf("podhost %v: request %+v, want %+v", tc.args, got, *tc.req)
			}
		default:
		}
	}
}
