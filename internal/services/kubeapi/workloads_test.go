package kubeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// workloadBackend serves workloads only (the other kinds are not read).
type workloadBackend struct {
	Backend
	objs []runtime.Object
}

func (b workloadBackend) Workloads() []runtime.Object { return b.objs }

// The workload kinds are listed read-only, with kubectl's columns as a
// Table, and a write is refused.
func TestServeWorkloads(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	three := int32(3)
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       appsv1.DeploymentSpec{Replicas: &three}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}}
	j := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default"}}
	tz := "Europe/Paris"
	cj := &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       batchv1.CronJobSpec{Schedule: "0 * * * *", TimeZone: &tz, Suspend: new(true)},
		Status:     batchv1.CronJobStatus{LastScheduleTime: &metav1.Time{Time: now.Add(-2 * time.Minute)}}}
	s := New(workloadBackend{objs: []runtime.Object{d, j, cj}}, nil, nil, Options{Now: func() time.Time { return now }})
	get := func(path, accept string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := get("/apis/apps/v1/namespaces/default/deployments", "")
	var list appsv1.DeploymentList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || len(list.Items) != 1 || list.Items[0].Status.ReadyReplicas != 2 {
		t.Fatalf("list deployments: %d %v %s", rec.Code, err, rec.Body)
	}
	rec = get("/apis/apps/v1/namespaces/default/deployments", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var tbl metav1.Table
	if err := json.Unmarshal(rec.Body.Bytes(), &tbl); err != nil || len(tbl.Rows) != 1 {
		t.Fatalf("table: %d %v %s", rec.Code, err, rec.Body)
	}
	if c := tbl.Rows[0].Cells; c[0] != "web" || c[1] != "2/3" || c[2] != float64(3) || c[3] != float64(2) || c[4] != "60m" {
		t.Errorf("row %v, want web 2/3 3 2 60m", c)
	}
	if rec = get("/apis/batch/v1/namespaces/default/jobs/batch", ""); rec.Code != http.StatusOK {
		t.Errorf("get job: %d %s", rec.Code, rec.Body)
	}
	rec = get("/apis/batch/v1/namespaces/default/cronjobs", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if err := json.Unmarshal(rec.Body.Bytes(), &tbl); err != nil || len(tbl.Rows) != 1 || len(tbl.ColumnDefinitions) != 10 {
		t.Fatalf("cronjobs table: %d %v %s", rec.Code, err, rec.Body)
	}
	if c := tbl.Rows[0].Cells; c[0] != "tick" || c[1] != "0 * * * *" || c[2] != tz || c[3] != "True" || c[4] != float64(0) || c[5] != "2m" || c[6] != "60m" {
		t.Errorf("cronjob row %v, want tick, 0 * * * *, Europe/Paris, True, 0, 2m, 60m", c)
	}
	req := httptest.NewRequest(http.MethodDelete, "/apis/apps/v1/namespaces/default/deployments/web", nil)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("delete a deployment: %d, want 405 %s", w.Code, w.Body)
	}
}
