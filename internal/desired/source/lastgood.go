package source

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// LastGood persists the last good content of each manifest file
// (*state.DB), so that a file that is invalid, unreadable or half-written
// when podhost starts keeps its pods at that version, exactly as while
// podhost runs. Only a file that is gone removes its pods.
type LastGood interface {
	ListManifests() ([]records.ManifestRecord, error)
	// UpdateManifests stores put and forgets del in one commit.
	UpdateManifests(put []records.ManifestRecord, del []string) error
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
	var unplaced []string // records of a podhost that kept no order: after the others, by path
	for _, r := range recs {
		if IsURLKey(r.Path) || !s.owns(r.Path) {
			continue // a URLSource's (url.go), or another dir source's (the cluster's)
		}
		s.stored[r.Path] = r
		if r.Seen == 0 {
			unplaced = append(unplaced, r.Path)
		} else {
			s.seen[r.Path] = r.Seen
			s.lastSeen = max(s.lastSeen, r.Seen)
		}
		if r.Data == nil {
			continue // a file holding a Secret: only its place is kept
		}
		objs, err := manifest.DecodeObjects(r.Path, r.Data)
		if err != nil {
			s.log.Warn("stored last good manifest no longer decodes; ignored", "file", r.Path, "err", err)
			continue
		}
		s.good[r.Path] = objs
	}
	slices.Sort(unplaced)
	for _, p := range unplaced {
		s.place(p)
	}
}

// persist queues data as the last good content of path, with its place in
// the first-seen order, when either changed; flushStored writes the queue.
//
// A file holding a Secret is stored without its content (Secret values
// must not reach the disk), only its place: its last good version lives in
// memory only, and is re-read from the file when podhost starts.
func (s *scanner) persist(path string, data []byte, hasSecret bool) {
	if s.store == nil {
		return
	}
	rec := records.ManifestRecord{Path: path, Data: data, Seen: s.seen[path]}
	if hasSecret {
		rec.Data = nil
	}
	if old, ok := s.stored[path]; ok && old.Seen == rec.Seen && (old.Data == nil) == (rec.Data == nil) && bytes.Equal(old.Data, rec.Data) {
		return
	}
	rec.Data = bytes.Clone(rec.Data)
	s.puts = append(s.puts, rec)
}

// owns reports whether a stored record is of a file in this scanner's dir.
// Two dir sources share one store (the manifest dir and the cluster's
// dir): each loads and forgets only its own files' records. A manifest
// dir given up for another leaves its records behind (their images stay
// out of image GC until the state db is reset).
func (s *scanner) owns(path string) bool {
	rel, err := filepath.Rel(s.dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// forgetStored queues the deletion of the records of files that are gone
// (in this scanner's dir, not seen by this scan).
func (s *scanner) forgetStored(seen map[string]bool) {
	if s.store == nil || !s.loaded {
		return
	}
	for path := range s.stored {
		if !seen[path] {
			s.dels = append(s.dels, path)
		}
	}
}

// flushStored writes what this scan queued in one commit, before its
// snapshot is emitted. A failed write is logged and retried at the next
// relist (s.stored still differs from the files).
func (s *scanner) flushStored() {
	puts, dels := s.puts, s.dels
	s.puts, s.dels = nil, nil
	if len(puts) == 0 && len(dels) == 0 {
		return
	}
	if err := s.store.UpdateManifests(puts, dels); err != nil {
		s.log.Warn("persist last good manifests", "files", len(puts)+len(dels), "err", err)
		return
	}
	for _, p := range dels {
		delete(s.stored, p)
	}
	for _, r := range puts {
		s.stored[r.Path] = r
	}
}
