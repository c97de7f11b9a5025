package main

import (
	"strings"
	"testing"
)

// An unknown subcommand is an error, as kubectl's: one error line (the
// suggestions and the pointer to help after it, unprefixed), exit code 1 —
// not the group's help and exit code 0; a group without arguments still
// prints its help.
func TestUnknownCommands(t *testing.T) {
	e := newTestEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "restart", "web"}, "Error: unknown command \"restart\" for \"podhost rollout\"\nSee 'podhost rollout --help' for usage.\n"},
		{[]string{"rollout", "histry", "web"}, "Error: unknown command \"histry\" for \"podhost rollout\"\n\nDid you mean this?\n\thistory\n\nSee 'podhost rollout --help' for usage.\n"},
		{[]string{"images", "foo"}, "Error: unknown command \"foo\" for \"podhost images\"\nSee 'podhost images --help' for usage.\n"},
		{[]string{"foo"}, "Error: unknown command \"foo\" for \"podhost\"\n\nDid you mean this?\n\ttop\n\nSee 'podhost --help' for usage.\n"},
		{[]string{"completion", "nope"}, "Error: unknown command \"nope\" for \"podhost completion\"\nSee 'podhost completion --help' for usage.\n"},
	} {
		code, stdout, stderr := e.podhost(t, "", tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("podhost %q: code %d, stdout %q, stderr:\n%s\nwant:\n%s", tc.args, code, stdout, stderr, tc.want)
		}
	}
	for _, args := range [][]string{{"rollout"}, {"images"}, {"top"}, {"rollout", "--help"}} {
		if code, stdout, stderr := e.podhost(t, "", args...); code != 0 || !strings.Contains(stdout, "Available Commands:") || stderr != "" {
			t.Errorf("podhost %q: code %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// kubectl's verbs podhost lacks get one line naming the kubectl command to
// run instead (the real kubectl against `podhost kubeconfig`), exit code 1.
func TestKubectlHints(t *testing.T) {
	e := newTestEnv(t)
	hint := func(what, cmd string) string {
		return "Error: podhost has no \"" + what + "\": run it with kubectl against podhost's Kubernetes API: kubectl " + cmd + " (kubeconfig: podhost kubeconfig)\n"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"edit", "pod", "web"}, hint("edit", "edit pod web")},
		{[]string{"--socket", "/nonexistent", "label", "pod", "web", "a=b"}, hint("label", "label pod web a=b")},
		{[]string{"create", "configmap", "app", "--from-file=app.conf"}, hint("create", "create configmap app --from-file=app.conf")},
		{[]string{"port-forward", "web", "8080:80"}, hint("port-forward", "port-forward web 8080:80")},
		{[]string{"top", "node"}, hint("top node", "top node")},
		{[]string{"get", "pods", "--field-selector", "status.phase=Running"}, hint("get --field-selector", "get pods --field-selector status.phase=Running")},
		{[]string{"get", "pods", "-o", "go-template={{.metadata.name}}"}, hint("-o go-template", "get pods -o go-template={{.metadata.name}}")},
	} {
		for _, verb := range []string{"diff", "explain", "annotate", "patch", "replace", "run", "attach", "debug", "api-resources"} {
			if !kubectlOnly[verb] {
				t.Errorf("%s: no kubectl hint", verb)
			}
		}
		code, stdout, stderr := e.podhost(t, "", tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("podhost %q: code %d, stdout %q, stderr:\n%s\nwant:\n%s", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
