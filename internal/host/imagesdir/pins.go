package imagesdir

import (
	"strconv"
	"strings"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// pinState is what the images store says of the images dir's archives.
type pinState struct {
	owners map[string]string                // ref → file name it is pinned to
	byFile map[string][]runtime.PinnedImage // file name → its images
}

func newPinState(imgs []runtime.PinnedImage) *pinState {
	st := &pinState{owners: map[string]string{}, byFile: map[string][]runtime.PinnedImage{}}
	for _, img := range imgs {
		name, ok := strings.CutPrefix(img.Labels[wellknown.LabelImagePinned], wellknown.PinnedImagesDir)
		if !ok {
			continue // pinned by something else
		}
		st.owners[img.Ref] = name
		st.byFile[name] = append(st.byFile[name], img)
	}
	return st
}

// done: every image pinned to file carries stamp, they are as many as the
// import yielded, and each is still in the content store.
func (st *pinState) done(file, stamp string) bool {
	imgs := st.byFile[file]
	if len(imgs) == 0 {
		return false
	}
	want := stamp + "/" + strconv.Itoa(len(imgs))
	for _, img := range imgs {
		if img.Labels[wellknown.LabelImagesDirImport] != want || !img.Present {
			return false
		}
	}
	return true
}

// owner is the file ref is pinned to ("" = none).
func (st *pinState) owner(ref string) string { return st.owners[ref] }

// take records that file now holds ref.
func (st *pinState) take(ref, file string) { st.owners[ref] = file }
