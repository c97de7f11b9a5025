package kubeapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// bookmarkEvery: how often a watch that allows bookmarks gets one.
const bookmarkEvery = time.Minute

func (s *Server) ctx() context.Context { return context.Background() }

// watcher is one watch request's state.
type watcher struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	enc     streaming.Encoder
	objEnc  runtime.Encoder
	a       accept
	k       *kind
	gv      schema.GroupVersion
	sel     selection
	include metav1.IncludeObjectPolicy
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	k, err := kindOf(ri)
	if err != nil {
		writeError(w, r, err)
		return
	}
	opts, sel, err := listOptions(r, ri, k)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var cursor uint64
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		if cursor, err = strconv.ParseUint(opts.ResourceVersion, 10, 64); err != nil {
			writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", opts.ResourceVersion)))
			return
		}
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if initial && !s.waitSourcesReady(r) {
		return
	}
	ww, err := s.newWatcher(w, r, a, k, ri.gv, sel)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.hub.addWatcher(k.key)
	defer s.hub.removeWatcher(k.key)
	if cursor == 0 || initial {
		cursor = ww.sendInitial(initial, opts.ResourceVersion)
	} else {
		s.hub.sync(k.key)
	}
	ww.follow(r.Context(), cursor, opts.AllowWatchBookmarks, watchTimeout(opts.TimeoutSeconds))
}

// watchTimeout is the request's timeoutSeconds, else as the API server's
// default a random 30 to 60 minutes (so that watches do not all end at once).
func watchTimeout(sec *int64) time.Duration {
	if sec != nil && *sec > 0 {
		return time.Duration(*sec) * time.Second
	}
	return 30*time.Minute + rand.N(30*time.Minute)
}

func (s *Server) newWatcher(w http.ResponseWriter, r *http.Request, a accept, k *kind, gv schema.GroupVersion, sel selection) (*watcher, error) {
	info, ok := runtime.SerializerInfoForMediaType(laxCodecs.SupportedMediaTypes(), a.mediaType)
	if !ok || info.StreamSerializer == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("no stream serialization for %q", a.mediaType))
	}
	var to metav1.TableOptions
	_ = paramCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &to)
	ct := info.MediaType
	if a.table {
		ct += ";as=Table;v=v1;g=meta.k8s.io"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the client's Watch returns on the headers
	objGV := gv
	if a.table || a.partial {
		objGV = metav1.SchemeGroupVersion
	}
	return &watcher{s: s, w: w, rc: rc, a: a, k: k, gv: gv, sel: sel,
		include: to.IncludeObject,
		enc: streaming.NewEncoder(info.StreamSerializer.NewFrameWriter(w),
			laxCodecs.EncoderForVersion(info.StreamSerializer.Serializer, unversioned)),
		objEnc: laxCodecs.EncoderForVersion(info.Serializer, objGV)}, nil
}

// sendInitial sends the current objects as ADDED (a watch from "now" or
// with sendInitialEvents), then with sendInitialEvents the bookmark that
// ends them; it returns the resourceVersion they are current at.
func (ww *watcher) sendInitial(bookmark bool, requested string) uint64 {
	objs, rv := ww.s.hub.snapshot(ww.k.key)
	sortObjects(objs)
	for _, o := range objs {
		if ww.k.matches(ww.sel, o) {
			if ww.send(watch.Added, o) != nil {
				return rv
			}
		}
	}
	if bookmark {
		_ = ww.sendBookmark(rv, true)
	}
	_ = ww.rc.Flush()
	return rv
}

// follow sends every change after cursor until the client goes, the
// timeout passes or the server closes; a cursor older than the kept
// changes gets the API server's 410 Expired error event.
func (ww *watcher) follow(ctx context.Context, cursor uint64, bookmarks bool, timeout time.Duration) {
	done := time.NewTimer(timeout)
	defer done.Stop()
	tick := time.NewTicker(bookmarkEvery)
	defer tick.Stop()
	for {
		changes, upto, wake, expired := ww.s.hub.since(ww.k.key, cursor)
		if expired {
			st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", cursor, upto)).Status()
			_ = ww.enc.Encode(&metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: encodeStatus(&st)}})
			_ = ww.rc.Flush()
			return
		}
		for _, c := range changes {
			if err := ww.sendChange(c); err != nil {
				return
			}
		}
		if len(changes) > 0 {
			if ww.rc.Flush() != nil {
				return
			}
		}
		cursor = upto
		select {
		case <-wake:
		case <-tick.C:
			if bookmarks && (ww.sendBookmark(cursor, false) != nil || ww.rc.Flush() != nil) {
				return
			}
		case <-done.C:
			return
		case <-ctx.Done():
			return
		case <-ww.s.closing:
			return
		}
	}
}

// sendChange sends c as this watch sees it, as the API server's watch
// cache filters: an object whose previous version matched the selectors and
// whose new one does not is DELETED, the other way round ADDED.
func (ww *watcher) sendChange(c change) error {
	was := c.prev != nil && ww.k.matches(ww.sel, c.prev)
	now := c.typ != watch.Deleted && ww.k.matches(ww.sel, c.obj)
	typ := c.typ
	switch {
	case c.typ == watch.Deleted && was:
	case !was && !now:
		return nil
	case was && !now:
		typ = watch.Deleted
	case !was && now:
		typ = watch.Added
	}
	return ww.send(typ, c.obj)
}

// send encodes one event, converting the object as the client asked
// (Table rows, partial metadata).
func (ww *watcher) send(typ watch.EventType, o runtime.Object) error {
	obj := o
	switch {
	case ww.a.table:
		m, _ := meta.Accessor(o)
		obj = ww.k.table.toTable([]runtime.Object{o}, m.GetResourceVersion(), ww.include, ww.s.opts.Now())
	case ww.a.partial:
		obj = partial(o)
	}
	raw, err := runtime.Encode(ww.objEnc, obj)
	if err != nil {
		return err
	}
	return ww.enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
}

// sendBookmark sends a BOOKMARK at rv: an object of the watched kind with
// only its resourceVersion (and the initial-events-end annotation).
func (ww *watcher) sendBookmark(rv uint64, initialEnd bool) error {
	o, err := scheme.New(ww.k.gvk)
	if err != nil {
		return err
	}
	m, _ := meta.Accessor(o)
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	obj := runtime.Object(o)
	if ww.a.table || ww.a.partial {
		obj = partial(o)
	}
	raw, err := runtime.Encode(ww.objEnc, obj)
	if err != nil {
		return err
	}
	return ww.enc.Encode(&metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: raw}})
}

func encodeStatus(st *metav1.Status) []byte {
	info, _ := runtime.SerializerInfoForMediaType(laxCodecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	b, _ := runtime.Encode(laxCodecs.EncoderForVersion(info.Serializer, unversioned), st)
	return b
}
