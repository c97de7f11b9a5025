package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// The kubelet's limits (pkg/kubelet/container: MaxContainerTerminationMessage*):
// at most the last 4 KiB of the termination-log file; with
// FallbackToLogsOnError, the last 80 log lines, cut to their last 2 KiB.
const (
	maxTerminationMessage  = 4096
	maxTerminationLogLines = 80
	maxTerminationLogBytes = 2048
)

// terminationMessage is what an exited container reports as its message
// (the kubelet's convertToKubeContainerStatus): its termination-log file,
// or with FallbackToLogsOnError, an empty file and a non-zero exit code,
// the tail of its log. An exited container whose task is gone (final)
// does not change any more, so the result is kept by container ID until
// RemoveContainer; while its task is there its log may still be missing
// the last line.
func (r *Runtime) terminationMessage(ctx context.Context, pc *podstate.Container, final bool) string {
	r.termMu.Lock()
	msg, ok := r.termMsgs[pc.ID]
	r.termMu.Unlock()
	if ok {
		return msg
	}
	msg = readTerminationMessage(ctx, pc.Labels, pc.ExitCode)
	if !final {
		return msg
	}
	r.termMu.Lock()
	r.termMsgs[pc.ID] = msg
	r.termMu.Unlock()
	return msg
}

func (r *Runtime) forgetTerminationMessage(id string) {
	r.termMu.Lock()
	delete(r.termMsgs, id)
	r.termMu.Unlock()
}

// readTerminationMessage reads the message from the files named by the
// container's labels: wellknown.LabelTerminationLog (the termination-log
// file), wellknown.LabelTerminationPolicy and wellknown.LabelLogPath.
func readTerminationMessage(ctx context.Context, labels map[string]string, exitCode int32) string {
	fallback := labels[wellknown.LabelTerminationPolicy] == string(corev1.TerminationMessageFallbackToLogsOnError) &&
		exitCode != 0
	msg := ""
	if p := labels[wellknown.LabelTerminationLog]; p != "" {
		data, err := readTail(p, maxTerminationMessage)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Sprintf("Error on reading termination log %s: %v", p, err)
		default:
			msg = string(data)
		}
	}
	if msg != "" || !fallback {
		return msg
	}
	return readLogTail(ctx, labels[wellknown.LabelLogPath])
}

// readTail returns the last max bytes of the file at path.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// readLogTail returns the last maxTerminationLogLines messages of the CRI
// log at path (stdout and stderr interleaved), cut to their last
// maxTerminationLogBytes bytes.
func readLogTail(ctx context.Context, path string) string {
	if path == "" {
		return ""
	}
	var buf tailBuffer
	opts := logs.ReadOptions{Tail: maxTerminationLogLines}
	if err := logs.Read(ctx, path, opts, &buf, &buf); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(buf.b)
}

// tailBuffer keeps the last maxTerminationLogBytes bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - maxTerminationLogBytes; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}
