package spec

import (
	"errors"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
)

// Command returns the container's process args. command and args are first
// expanded ($(VAR)) against env, the container's resolved environment
// (ResolveEnv; the image's env is not used, as in Kubernetes). Then, as the
// kubelet and containerd's CRI plugin: command replaces the image ENTRYPOINT
// and drops its CMD; args alone replace CMD; neither keeps both.
func Command(c *corev1.Container, img ocispec.ImageConfig, env []corev1.EnvVar) ([]string, error) {
	vars := envMap(env)
	command := expandAll(c.Command, vars)
	args := expandAll(c.Args, vars)
	if len(command) == 0 {
		if len(args) == 0 {
			args = img.Cmd
		}
		if len(img.Entrypoint) != 1 || img.Entrypoint[0] != "" {
			command = img.Entrypoint
		}
	}
	out := make([]string, 0, len(command)+len(args))
	out = append(append(out, command...), args...)
	if len(out) == 0 {
		return nil, errors.New("no command specified: the image has no ENTRYPOINT or CMD and the container sets neither command nor args")
	}
	return out, nil
}

func expandAll(in []string, vars map[string]string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = Expand(s, lookupIn(vars))
	}
	return out
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

func lookupIn(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// Expand replaces $(VAR) references in s with Kubernetes semantics
// (third_party/forked/golang/expansion): a reference lookup does not know
// stays as written, "$$" is an escaped "$" (so "$$(VAR)" gives "$(VAR)"),
// and a "$" not followed by "(" or "$" is kept.
func Expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	checkpoint := 0
	for cur := 0; cur < len(s); cur++ {
		if s[cur] != '$' || cur+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:cur])
		read, isVar, advance := readVariable(s[cur+1:])
		switch {
		case !isVar:
			b.WriteString(read)
		default:
			if v, ok := lookup(read); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + read + ")")
			}
		}
		cur += advance
		checkpoint = cur + 1
	}
	return b.String() + s[checkpoint:]
}

// readVariable reads what follows a '$': the name of a $(NAME) reference, or
// the literal text to copy, and how many bytes it consumed.
func readVariable(in string) (string, bool, int) {
	switch in[0] {
	case '$':
		return "$", false, 1
	case '(':
		if end := strings.IndexByte(in[1:], ')'); end >= 0 {
			return in[1 : end+1], true, end + 2
		}
		return "$(", false, 1
	default:
		return "$" + in[:1], false, 1
	}
}
