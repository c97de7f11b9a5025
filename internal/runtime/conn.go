package runtime

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// Flow-control windows of the containerd connection. Static windows turn
// off gRPC's bandwidth-delay estimation, which sends a ping (and reads its
// ack) after every response: over a unix socket it gains nothing and was
// a third of the idle daemon's gRPC traffic. The windows only bound how
// much containerd may send ahead; nothing is allocated up front.
const (
	streamWindow = 4 << 20
	connWindow   = 8 << 20
)

// answerClock records when containerd last answered a call.
type answerClock struct{ at atomic.Int64 } // unix nanoseconds

// unary is a gRPC interceptor noting every call containerd answered.
func (a *answerClock) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err == nil {
		a.at.Store(time.Now().UnixNano())
	}
	return err
}

func (a *answerClock) last() time.Time {
	if n := a.at.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (a *answerClock) dialOpts() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(a.unary),
		grpc.WithStaticStreamWindowSize(streamWindow),
		grpc.WithStaticConnWindowSize(connWindow),
	}
}

// LastAnswered is when containerd last answered a call of this Runtime
// (zero before the first): the health monitor skips its probe while calls
// keep succeeding.
func (r *Runtime) LastAnswered() time.Time { return r.answers.last() }
