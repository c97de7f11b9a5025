package source

import (
	"bytes"

	"github.com/podhost/podhost/internal/manifest"
	"github.com/podhost/podhost/internal/state"
)

// LastGood persists the last good content of each manifest file
// (*state.DB), so that a file that is invalid, unreadable or half-written
// when podhost starts keeps its pods at that version, exactly as while
// podhost runs. Only a file that is gone removes its pods.
type LastGood interface {
	ListManifests() ([]state.ManifestRecord, error)
	PutManifest(path string, data []byte) error
	DeleteManifest(path string) error
}

// loadStored reads the store once, before the first file is read: every
// record that still decodes becomes its file's last good version. A record
// that no longer decodes (a newer podhost's refusal) is dropped from good
// but stays stored until its file is gone or valid again.
func (s *scanner) loadStored() {
	if s.store == nil || s.loaded {
		return
	}
	recs, err := s.store.ListManifests()
	if err != nil {
		s.log.Error("read last good manifests; files invalid now will lose their pods", "err", err)
		return
	}
	s.loaded = true
	for _, r := range recs {
		if IsURLKey(r.Path) {
			continue // a URLSource's (url.go)
		}
		s.stored[r.Path] = r.Data
		pods, err := manifest.Decode(r.Path, r.Data)
		if err != nil {
			s.log.Warn("stored last good manifest no longer decodes; ignored", "file", r.Path, "err", err)
			continue
		}
		s.good[r.Path] = pods
	}
}

// persist records data as the last good content of path, when it changed.
// A failed write is logged and retried at the next relist.
//
// Today a manifest holds only Pods. When manifests may carry Secrets, this
// is where their values must be kept out of the store: persist the file
// with the Secret data stripped (and re-read it from the file), never raw.
func (s *scanner) persist(path string, data []byte) {
	if s.store == nil {
		return
	}
	if old, ok := s.stored[path]; ok && bytes.Equal(old, data) {
		return
	}
	if err := s.store.PutManifest(path, data); err != nil {
		s.log.Warn("persist last good manifest", "file", path, "err", err)
		return
	}
	s.stored[path] = bytes.Clone(data)
}

// forgetStored deletes the records of files that are gone (not seen by
// this scan, including those of another manifest dir).
func (s *scanner) forgetStored(seen map[string]bool) {
	if s.store == nil || !s.loaded {
		return
	}
	for path := range s.stored {
		if seen[path] {
			continue
		}
		if err := s.store.DeleteManifest(path); err != nil {
			s.log.Warn("forget last good manifest", "file", path, "err", err)
			continue
		}
		delete(s.stored, path)
	}
}
