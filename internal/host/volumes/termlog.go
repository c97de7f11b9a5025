package volumes

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// TerminationLog creates the empty termination-log file of one container
// instance, <root>/<pod uid>/<container>.<containerID>.termination-log,
// mode 0666 whatever the umask (the kubelet's makeMounts: the container's
// user, whoever it is, writes it; the 0750 pod dir keeps other host users
// out), and returns its path. It lives in the pod's directory, so it survives podhost restarts
// and Cleanup removes it with the pod; one file per instance keeps the
// message of the previous instance (lastState) apart from the current one.
// The kubelet nests it in containers/<container>/; flat, a pod's first
// start makes two inodes instead of four, and on an ext4 without a journal
// every new inode scans past the recently deleted ones (docs/decisions.md
// 16). A container name has no dot, so no name collides with the pod
// directory's volume dirs.
func (m *Manager) TerminationLog(uid types.UID, container, containerID string) (string, error) {
	dir := m.PodDir(uid)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return "", fmt.Errorf("termination log of %s: %w", container, err)
	}
	p := filepath.Join(dir, container+"."+containerID+".termination-log")
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
