package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// recursiveReadOnly as the kubelet resolves it (resolveRecursiveReadOnly)
// and CRI mounts it (WithMounts): rro in place of ro when the runtime
// supports it; Enabled without support, readOnly false or a propagation
// other than None fail the container's config with the kubelet's message.
func TestBuildRecursiveReadOnly(t *testing.T) {
	none, h2c := corev1.MountPropagationNone, corev1.MountPropagationHostToContainer
	tests := []struct {
		name        string
		mode        corev1.RecursiveReadOnlyMode // "": unset
		readOnly    bool
		propagation *corev1.MountPropagationMode
		supported   bool
		want        []string
		wantErr     string
	}{
		{name: "unset", readOnly: true, supported: true, want: []string{"rbind", "rprivate", "ro"}},
		{name: "disabled", mode: corev1.RecursiveReadOnlyDisabled, readOnly: true, supported: true,
			want: []string{"rbind", "rprivate", "ro"}},
		{name: "disabled read-write", mode: corev1.RecursiveReadOnlyDisabled, want: []string{"rbind", "rprivate", "rw"}},
		{name: "if possible, supported", mode: corev1.RecursiveReadOnlyIfPossible, readOnly: true, supported: true,
			want: []string{"rbind", "rprivate", "rro"}},
		{name: "if possible, unsupported", mode: corev1.RecursiveReadOnlyIfPossible, readOnly: true,
			want: []string{"rbind", "rprivate", "ro"}},
		{name: "enabled, supported", mode: corev1.RecursiveReadOnlyEnabled, readOnly: true, supported: true,
			propagation: &none, want: []string{"rbind", "rprivate", "rro"}},
		{name: "enabled, unsupported", mode: corev1.RecursiveReadOnlyEnabled, readOnly: true,
			wantErr: `volumeMounts[0] (v): failed to resolve recursive read-only mode: volume "v" requested recursive read-only mode, but it is not supported by the runtime`},
		{name: "enabled, read-write", mode: corev1.RecursiveReadOnlyEnabled, supported: true,
			wantErr: `volume "v" requested recursive read-only mode, but it is not read-only`},
		{name: "if possible, read-write", mode: corev1.RecursiveReadOnlyIfPossible,
			wantErr: `volume "v" requested recursive read-only mode, but it is not read-only`},
		{name: "if possible, host to container", mode: corev1.RecursiveReadOnlyIfPossible, readOnly: true, supported: true,
			propagation: &h2c, wantErr: `volume "v" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
		{name: "unknown mode", mode: "Sometimes", readOnly: true, supported: true,
			wantErr: `unknown recursive read-only mode "Sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			p.Host.RecursiveReadOnlyMounts = func() bool { return tt.supported }
			p.LookupMount = mountWith("shared:1")
			c := testContainer(p)
			vm := corev1.VolumeMount{ReadOnly: tt.readOnly, MountPropagation: tt.propagation}
			if tt.mode != "" {
				vm.RecursiveReadOnly = &tt.mode
			}
			volume(&p, &c, vm)
			s, err := generate(t, p, c)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if err == nil {
				eq(t, "options", mountAt(s, "/mnt").Options, tt.want)
			}
		})
	}
}

// A missing mount source is created when the container is created, as
// containerd's CRI WithMounts does (an unset-type hostPath the init
// containers had not made): the hook runs when the spec options are
// applied, not when Build lists them, and before the propagation check;
// its error fails the creation.
func TestBuildMakesMountSourcesAtCreation(t *testing.T) {
	p := testPod()
	c := testContainer(p)
	volume(&p, &c, corev1.VolumeMount{})
	var made []string
	p.MakeMountSource = func(path string) error {
		made = append(made, path)
		return nil
	}
	if _, err := Build(p, c); err != nil || len(made) != 0 {
		t.Fatalf("Build: %v, made %v before creation", err, made)
	}
	if _, err := generate(t, p, c); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(made, "/v") {
		t.Fatalf("made %v, want the volume source /v", made)
	}
	p.MakeMountSource = func(path string) error { return errors.New("failed to mkdir " + path) }
	if _, err := generate(t, p, c); err == nil || !strings.Contains(err.Error(), "failed to mkdir") {
		t.Fatalf("err = %v, want the mkdir error", err)
	}
}
