package kubeapi

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// metrics serves metrics.k8s.io (kubectl top pod|node), as metrics-server
// does: CPU as a rate over a short window, memory the working set.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a.table, a.partial = false, false
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if ri.resource.name == "nodes" {
		nm, err := s.b.NodeMetrics(r.Context())
		switch {
		case err != nil:
			writeError(w, r, err)
		case ri.name != "" && ri.name != nm.Name:
			writeError(w, r, apierrors.NewNotFound(ri.groupResource(), ri.name))
		case ri.name != "":
			writeObject(w, a, http.StatusOK, nm, metricsGV)
		default:
			l := &metricsv1beta1.NodeMetricsList{}
			if sel.Matches(labels.Set(nm.Labels)) {
				l.Items = append(l.Items, *nm)
			}
			writeObject(w, a, http.StatusOK, l, metricsGV)
		}
		return
	}
	pms, err := s.b.PodMetrics(r.Context(), ri.namespace)
	if err != nil {
		writeError(w, r, err)
		return
	}
	l := &metricsv1beta1.PodMetricsList{}
	for _, pm := range pms {
		if ri.name != "" && pm.Name != ri.name || !sel.Matches(labels.Set(pm.Labels)) {
			continue
		}
		if ri.name != "" {
			writeObject(w, a, http.StatusOK, &pm, metricsGV)
			return
		}
		l.Items = append(l.Items, pm)
	}
	if ri.name != "" {
		writeError(w, r, apierrors.NewNotFound(ri.groupResource(), ri.name))
		return
	}
	writeObject(w, a, http.StatusOK, l, metricsGV)
}
