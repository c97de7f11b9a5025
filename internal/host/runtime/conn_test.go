package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/api/types/task"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

func TestAnswerClockNotesAnsweredCalls(t *testing.T) {
	var a answerClock
	call := func(err error) error {
		return a.unary(context.Background(), "/m", nil, nil, nil,
			func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return err })
	}
	if err := call(errors.New("unavailable")); err == nil || !a.last().IsZero() {
		t.Fatalf("failed call: err %v, last %v", err, a.last())
	}
	if err := call(nil); err != nil || a.last().IsZero() {
		t.Fatalf("answered call: err %v, last %v", err, a.last())
	}
	first := a.last()
	if err := call(errors.New("unavailable")); err == nil || !a.last().Equal(first) {
		t.Fatalf("failed call moved last: %v -> %v", first, a.last())
	}
}

// innerCodec counts the messages sizedCodec hands to gRPC's codec.
type innerCodec struct {
	encoding.CodecV2
	unmarshals int
}

func (c *innerCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.unmarshals++
	return c.CodecV2.Unmarshal(data, v)
}

func TestSizedCodecReadsLargeMessagesOutsideThePool(t *testing.T) {
	for _, tc := range []struct {
		tasks      int
		wantPooled int // messages read by gRPC's codec (its buffer pool)
	}{
		{tasks: 1, wantPooled: 1},
		{tasks: 2000, wantPooled: 0}, // well over pooledMessageMax
	} {
		in := &tasks.ListTasksResponse{}
		for i := range tc.tasks {
			in.Tasks = append(in.Tasks, &task.Process{ID: fmt.Sprintf("task-%d", i), Pid: uint32(i), Stdout: "/run/podhost/fifo/stdout"})
		}
		b, err := proto.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var data mem.BufferSlice // as gRPC's transport hands it over: in frames
		for len(b) > 0 {
			n := min(len(b), 16<<10)
			data = append(data, mem.SliceBuffer(b[:n]))
			b = b[n:]
		}
		inner := &innerCodec{CodecV2: encoding.GetCodecV2("proto")}
		out := &tasks.ListTasksResponse{}
		if err := (sizedCodec{inner}).Unmarshal(data, out); err != nil {
			t.Fatalf("%d tasks: %v", tc.tasks, err)
		}
		if !proto.Equal(in, out) {
			t.Fatalf("%d tasks: read back a different message", tc.tasks)
		}
		if inner.unmarshals != tc.wantPooled {
			t.Errorf("%d tasks (%d bytes): %d read through gRPC's pooled codec, want %d", tc.tasks, data.Len(), inner.unmarshals, tc.wantPooled)
		}
	}
	if got := (sizedCodec{encoding.GetCodecV2("proto")}).Name(); got != "proto" {
		t.Errorf("Name() = %q: the content-subtype would change", got)
	}
}
