package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/podhost/podhost/internal/kubelet/handler"
)

// doGRPC calls grpc.health.v1.Health/Check (plaintext) on the pod IP and
// the probe's port with its service: SERVING succeeds, anything else fails.
// Messages are the kubelet's (pkg/probe/grpc/grpc.go), word for word.
func doGRPC(ctx context.Context, req request, timeout time.Duration) (outcome, string, error) {
	g := req.probe.GRPC
	host, err := probeHost("", req)
	if err != nil {
		return outcomeUnknown, "", err
	}
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(g.Port)))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(UserAgent),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return handler.Dialer().DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		return outcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer func() { _ = conn.Close() }()
	if !waitReady(ctx, conn) {
		return outcomeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, ctx.Err()), nil
	}
	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}),
		&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return outcomeFailure, grpcErrorMessage(err, timeout), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return outcomeSuccess, "service healthy", nil
}

// waitReady connects conn and waits until it is ready, or ctx ends (false):
// the kubelet dials with grpc.WithBlock, so a server that cannot be reached
// (refused, unroutable) fails the probe at its timeout with the connect
// message, not at once.
func waitReady(ctx context.Context, conn *grpc.ClientConn) bool {
	conn.Connect()
	for {
		st := conn.GetState()
		if st == connectivity.Ready {
			return true
		}
		if !conn.WaitForStateChange(ctx, st) {
			return false
		}
	}
}

func grpcErrorMessage(err error, timeout time.Duration) string {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	switch st.Code() {
	case codes.Unimplemented:
		return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
	case codes.DeadlineExceeded:
		return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
	}
	return fmt.Sprintf("error: health rpc probe failed: %+v", err)
}
