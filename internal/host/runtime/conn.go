package runtime

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(sizedCodec{encoding.GetCodecV2("proto")})),
	}
}

// pooledMessageMax is the largest message read into a buffer of gRPC's
// pool: its tiers end at 32 KiB, then jump to 1 MiB.
const pooledMessageMax = 32 << 10

// sizedCodec is gRPC's proto codec, except that a message larger than
// pooledMessageMax is read into a buffer of its own size, left to the
// garbage collector. gRPC's codec reads every message spread over
// several frames into a buffer of its pool's next tier, and keeps that
// buffer pooled: a 100 KiB task list (250 pods) pinned a 1 MiB buffer
// for the daemon's life, and a burst of them one each.
type sizedCodec struct{ encoding.CodecV2 }

func (c sizedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok || data.Len() <= pooledMessageMax {
		return c.CodecV2.Unmarshal(data, v)
	}
	// Materialize copies into a new slice; proto.Unmarshal copies what it
	// keeps, so the slice is garbage when this returns.
	return proto.Unmarshal(data.Materialize(), m)
}

// LastAnswered is when containerd last answered a call of this Runtime
// (zero before the first): the health monitor skips its probe while calls
// keep succeeding.
func (r *Runtime) LastAnswered() time.Time { return r.answers.last() }
