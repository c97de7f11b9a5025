package runtime

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NewTask's error when it met a shim that was shutting down reaches podhost
// as a gRPC status from containerd carrying ttrpc's text: retried; anything
// else is not.
func TestIsShimClosed(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unknown, "failed to create shim task: ttrpc: closed"), true},
		{fmt.Errorf("create task: %w", status.Error(codes.Unknown, "failed to create shim task: ttrpc: closed")), true},
		{status.Error(codes.Unknown, "failed to start shim: start failed: dial unix /run/containerd/s/0f3a: connect: connection refused"), true},
		{status.Error(codes.NotFound, "container not found"), false},
		{errors.New("dial unix /run/containerd/containerd.sock: connect: connection refused"), false},
		{errors.New("failed to create shim task: OCI runtime create failed"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := isShimClosed(tt.err); got != tt.want {
			t.Errorf("isShimClosed(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
