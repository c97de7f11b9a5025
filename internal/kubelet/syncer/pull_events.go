package syncer

import (
	"fmt"
	"time"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// pulledMessage is the kubelet's "Pulled" event text.
func pulledMessage(ref string, img runtimeapi.Image, start, pullStart, end time.Time) string {
	if !img.Pulled || pullStart.IsZero() {
		return fmt.Sprintf("Container image %q already present on machine", ref)
	}
	return fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
		ref, end.Sub(pullStart).Round(time.Millisecond), end.Sub(start).Round(time.Millisecond), img.Size)
}
