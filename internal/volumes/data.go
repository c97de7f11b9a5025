package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/configdata"
)

const (
	configMapDir = "configmap"
	secretDir    = "secret"
)

// noData is the Lookup of a Manager without one: nothing exists.
type noData struct{}

func (noData) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (noData) Secret(string, string) (*corev1.Secret, bool)       { return nil, false }

func (m *Manager) lookup() configdata.Lookup {
	if m.Data == nil {
		return noData{}
	}
	return m.Data
}

// prepareData writes a configMap or secret volume (a tmpfs for a secret)
// and returns its directory. A missing ConfigMap, Secret or key that the
// volume does not mark optional is an error naming it.
func (m *Manager) prepareData(pod *corev1.Pod, v *corev1.Volume) (string, error) {
	var (
		payload map[string]configdata.File
		err     error
		kind    = configMapDir
	)
	if v.Secret != nil {
		kind = secretDir
		payload, err = configdata.SecretPayload(m.lookup(), pod.Namespace, v.Secret)
	} else {
		payload, err = configdata.ConfigMapPayload(m.lookup(), pod.Namespace, v.ConfigMap)
	}
	if err != nil {
		return "", err
	}
	dir := filepath.Join(m.PodDir(pod.UID), "volumes", kind, v.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if kind == secretDir {
		if err := mountTmpfs(dir); err != nil {
			return "", err
		}
	}
	if err := WriteAtomic(dir, payload, fsGroup(pod)); err != nil {
		return "", fmt.Errorf("%s volume: %w", kind, err)
	}
	return dir, nil
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

// Refresh rewrites the configMap and secret volumes of a running pod that
// were prepared already, so a changed ConfigMap or Secret shows in the
// pod's files (atomically, WriteAtomic). Volumes not prepared yet are left
// to Prepare. A ConfigMap or Secret that went away leaves the last files,
// as in the kubelet.
func (m *Manager) Refresh(ctx context.Context, pod *corev1.Pod) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.ConfigMap == nil && v.Secret == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		kind := configMapDir
		if v.Secret != nil {
			kind = secretDir
		}
		dir := filepath.Join(m.PodDir(pod.UID), "volumes", kind, v.Name)
		if _, err := os.Lstat(filepath.Join(dir, dataDirName)); err != nil {
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

// HasDataVolumes reports whether pod has configMap or secret volumes.
func HasDataVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil || v.Secret != nil {
			return true
		}
	}
	return false
}
