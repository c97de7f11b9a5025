package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/host/spec"
)

const (
	configMapDir = "configmap"
	secretDir    = "secret"
	downwardDir  = "downward-api"
	projectedDir = "projected"
)

// noData is the Lookup of a Manager without one: nothing exists.
type noData struct{}

func (noData) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (noData) Secret(string, string) (*corev1.Secret, bool)       { return nil, false }

// PodData gives the Lookup of one pod: the ConfigMaps and Secrets it may
// read (*configdata.Store).
type PodData interface {
	For(pod *corev1.Pod) configdata.Lookup
}

func (m *Manager) lookup(pod *corev1.Pod) configdata.Lookup {
	if m.Data == nil {
		return noData{}
	}
	return m.Data.For(pod)
}

// dataKind returns the directory kind of a volume whose files podhost
// writes (configMap, secret, downwardAPI, projected) and whether it is a
// tmpfs (all but configMap, as the kubelet's memory-backed wrappers); ""
// for other volumes.
func dataKind(v *corev1.Volume) (string, bool) {
	switch {
	case v.ConfigMap != nil:
		return configMapDir, false
	case v.Secret != nil:
		return secretDir, true
	case v.DownwardAPI != nil:
		return downwardDir, true
	case v.Projected != nil:
		return projectedDir, true
	}
	return "", false
}

func (m *Manager) payload(pod *corev1.Pod, v *corev1.Volume) (map[string]configdata.File, error) {
	res := func(ref *corev1.ResourceFieldSelector) (string, error) {
		return spec.ResourceValue(pod, m.Allocatable, ref)
	}
	switch {
	case v.ConfigMap != nil:
		return configdata.ConfigMapPayload(m.lookup(pod), pod.Namespace, v.ConfigMap)
	case v.Secret != nil:
		return configdata.SecretPayload(m.lookup(pod), pod.Namespace, v.Secret)
	case v.DownwardAPI != nil:
		return configdata.DownwardAPIPayload(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, res)
	default:
		return configdata.ProjectedPayload(m.lookup(pod), pod, v.Projected, res)
	}
}

// prepareData writes a configMap, secret, downwardAPI or projected volume
// (on a tmpfs but for configMap) and returns its directory. A missing
// ConfigMap, Secret or key that the volume does not mark optional is an
// error naming it.
func (m *Manager) prepareData(pod *corev1.Pod, v *corev1.Volume) (string, error) {
	kind, tmpfs := dataKind(v)
	payload, err := m.payload(pod, v)
	if err != nil {
		return "", err
	}
	dir := m.dataDir(pod, v)
	if err := m.makeVolumesDir(pod.UID); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if tmpfs {
		if err := mountTmpfs(dir); err != nil {
			return "", err
		}
	}
	if err := WriteAtomic(dir, payload, fsGroup(pod)); err != nil {
		return "", fmt.Errorf("%s volume: %w", kind, err)
	}
	return dir, nil
}

// dataDir is where the files of data volume v live.
func (m *Manager) dataDir(pod *corev1.Pod, v *corev1.Volume) string {
	kind, _ := dataKind(v)
	return filepath.Join(m.PodDir(pod.UID), "volumes", kind, v.Name)
}

// populated reports whether v is a data volume whose files were written
// once (its ..data link exists).
func (m *Manager) populated(pod *corev1.Pod, v *corev1.Volume) bool {
	if !IsDataVolume(v) {
		return false
	}
	_, err := os.Lstat(filepath.Join(m.dataDir(pod, v), dataDirName))
	return err == nil
}

func mountTmpfs(dir string) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// Refresh rewrites the configMap, secret, downwardAPI and projected
// volumes of a running pod that were prepared already, so a changed
// ConfigMap or Secret (or the labels and annotations of a pod updated in
// place) shows in the pod's files (atomically, WriteAtomic). Volumes not prepared yet are left
// to Prepare. A ConfigMap or Secret that went away leaves the last files,
// as in the kubelet.
func (m *Manager) Refresh(ctx context.Context, pod *corev1.Pod) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		kind, _ := dataKind(v)
		if kind == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !m.populated(pod, v) {
			continue // not prepared yet
		}
		if _, err := m.prepareData(pod, v); err != nil {
			errs = append(errs, fmt.Errorf("spec.volumes[%d] (%s): %w", i, v.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("refresh volumes: %v", errs)
	}
	return nil
}

// HasDataVolumes reports whether pod has configMap, secret, downwardAPI
// or projected volumes (files podhost writes and keeps up to date).
func HasDataVolumes(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if IsDataVolume(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// IsDataVolume reports whether v is a volume podhost writes the files of
// (mounted read-only, as the kubelet's API data volumes).
func IsDataVolume(v *corev1.Volume) bool {
	kind, _ := dataKind(v)
	return kind != ""
}
