package volumes

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// TerminationLog creates the empty termination-log file of one container
// instance, <root>/<pod uid>/containers/<container>/<containerID>, mode 0666
// whatever the umask (the kubelet's makeMounts), and returns its path. It
// lives under the pod's directory, so it survives podhost restarts and
// Cleanup removes it with the pod; one file per instance keeps the message
// of the previous instance (lastState) apart from the current one.
func (m *Manager) TerminationLog(uid types.UID, container, containerID string) (string, error) {
	dir := filepath.Join(m.PodDir(uid), "containers", container)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("termination log of %s: %w", container, err)
	}
	p := filepath.Join(dir, containerID)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination log of %s: %w", container, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("termination log of %s: %w", container, err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		return "", fmt.Errorf("termination log of %s: %w", container, err)
	}
	return p, nil
}
