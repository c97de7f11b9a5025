package runtime

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
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
