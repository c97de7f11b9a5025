package kubeapi

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxBody is the largest request body read, as the API server's 3 MiB.
const maxBody = 3 << 20

// mediaTypes the server answers in, first the default.
var mediaTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}

// accept is what a request's Accept header asks for.
type accept struct {
	mediaType string // one of mediaTypes
	table     bool   // as=Table;g=meta.k8s.io (v1 or v1beta1)
	partial   bool   // as=PartialObjectMetadata[List]
	discovery bool   // as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2
}

// negotiate reads the Accept header the way the API server does: the first
// acceptable clause wins; none acceptable is 406.
func negotiate(r *http.Request) (accept, error) {
	h := r.Header.Get("Accept")
	if h == "" {
		return accept{mediaType: runtime.ContentTypeJSON}, nil
	}
	for _, a := range goautoneg.ParseAccept(h) {
		mt := a.Type + "/" + a.SubType
		switch {
		case mt == "*/*" || mt == "application/*":
			mt = runtime.ContentTypeJSON
		case !contains(mediaTypes, mt):
			continue
		}
		switch a.Params["as"] {
		case "":
			return accept{mediaType: mt}, nil
		case "Table":
			if a.Params["g"] == "meta.k8s.io" && (a.Params["v"] == "v1" || a.Params["v"] == "v1beta1") && mt != runtime.ContentTypeProtobuf {
				return accept{mediaType: mt, table: true}, nil
			}
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if a.Params["g"] == "meta.k8s.io" && a.Params["v"] == "v1" {
				return accept{mediaType: mt, partial: true}, nil
			}
		case "APIGroupDiscoveryList":
			if a.Params["g"] == "apidiscovery.k8s.io" && a.Params["v"] == "v2" && mt == runtime.ContentTypeJSON {
				return accept{mediaType: mt, discovery: true}, nil
			}
		}
	}
	return accept{}, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(mediaTypes, ", ")}}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeObject encodes obj as gv in the negotiated media type with the given
// status code.
func writeObject(w http.ResponseWriter, a accept, code int, obj runtime.Object, gv schema.GroupVersion) {
	info, ok := runtime.SerializerInfoForMediaType(laxCodecs.SupportedMediaTypes(), a.mediaType)
	if !ok {
		info, _ = runtime.SerializerInfoForMediaType(laxCodecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	}
	ct := info.MediaType
	switch {
	case a.table:
		ct += ";as=Table;v=v1;g=meta.k8s.io"
	case a.discovery:
		ct += ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	if err := laxCodecs.EncoderForVersion(info.Serializer, gv).Encode(obj, w); err != nil {
		slog.Debug("kube api: encode response", "err", err)
	}
}

// statusOf is err as an API Status: an APIStatus keeps its code and reason,
// anything else is a 500 InternalError.
func statusOf(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &s
	}
	s := apierrors.NewInternalError(err).Status()
	return &s
}

// writeError answers err as a metav1.Status with its code.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	a, nerr := negotiate(r)
	if nerr != nil || a.table || a.discovery || a.partial {
		a = accept{mediaType: runtime.ContentTypeJSON}
	}
	s := statusOf(err)
	if s.Code == 0 {
		s.Code = http.StatusInternalServerError
	}
	writeObject(w, a, int(s.Code), s, unversioned)
}

// readBody reads a request body of at most maxBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if len(b) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxBody))
	}
	return b, nil
}
