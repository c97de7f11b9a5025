package manifest

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1 "k8s.io/api/apps/v1"
)

// validateStrategy checks a workload's update strategy as the API server
// does, and refuses what podhost does not roll out (internal/desired/rolling):
// OnDelete (there is no pod delete that a controller would answer) and a
// StatefulSet partition.
func (w *Workload) validateStrategy() field.ErrorList {
	var all field.ErrorList
	p := field.NewPath("spec")
	switch {
	case w.Deployment != nil:
		s := w.Deployment.Spec.Strategy
		p = p.Child("strategy")
		switch s.Type {
		case "", appsv1.RollingUpdateDeploymentStrategyType:
			if ru := s.RollingUpdate; ru != nil {
				all = append(all, validateSurgeUnavailable(ru.MaxSurge, ru.MaxUnavailable, p.Child("rollingUpdate"))...)
			}
		case appsv1.RecreateDeploymentStrategyType:
			if s.RollingUpdate != nil {
				all = append(all, field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
			}
		default:
			all = append(all, field.NotSupported(p.Child("type"), s.Type, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
		}
	case w.StatefulSet != nil:
		s := w.StatefulSet.Spec.UpdateStrategy
		p = p.Child("updateStrategy")
		all = append(all, validateUpdateType(string(s.Type), p.Child("type"))...)
		if ru := s.RollingUpdate; ru != nil {
			if ru.Partition != nil && *ru.Partition != 0 {
				all = append(all, forbidden(p.Child("rollingUpdate", "partition"), "a partition (a staged rollout) is"))
			}
			all = append(all, validateSurgeUnavailable(nil, ru.MaxUnavailable, p.Child("rollingUpdate"))...)
		}
	case w.DaemonSet != nil:
		s := w.DaemonSet.Spec.UpdateStrategy
		p = p.Child("updateStrategy")
		all = append(all, validateUpdateType(string(s.Type), p.Child("type"))...)
		if ru := s.RollingUpdate; ru != nil {
			all = append(all, validateSurgeUnavailable(ru.MaxSurge, ru.MaxUnavailable, p.Child("rollingUpdate"))...)
		}
	}
	return all
}

// validateSurgeUnavailable: each a non-negative integer or percentage
// (at most 100% for maxUnavailable), not both zero.
func validateSurgeUnavailable(surge, unavail *intstr.IntOrString, p *field.Path) field.ErrorList {
	var all field.ErrorList
	zero := 0
	for _, f := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"maxSurge", surge}, {"maxUnavailable", unavail}} {
		if f.v == nil {
			continue
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(f.v, 100, true)
		switch {
		case err != nil:
			all = append(all, field.Invalid(p.Child(f.name), f.v.String(), "must be an integer or percentage (e.g '5%')"))
		case n < 0:
			all = append(all, field.Invalid(p.Child(f.name), f.v.String(), "must be greater than or equal to 0"))
		case f.name == "maxUnavailable" && f.v.Type == intstr.String && n > 100:
			all = append(all, field.Invalid(p.Child(f.name), f.v.String(), "must not be greater than 100%"))
		case n == 0:
			zero++
		}
	}
	if surge != nil && unavail != nil && zero == 2 {
		all = append(all, field.Invalid(p.Child("maxUnavailable"), unavail.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return all
}

// validateUpdateType: a StatefulSet's or DaemonSet's updateStrategy.type
// (both spell them "RollingUpdate" and "OnDelete").
func validateUpdateType(typ string, p *field.Path) field.ErrorList {
	switch typ {
	case "", string(appsv1.RollingUpdateStatefulSetStrategyType):
		return nil
	case string(appsv1.OnDeleteStatefulSetStrategyType):
		return field.ErrorList{unsupported(p, typ, "a template edit is rolled out: use RollingUpdate")}
	}
	return field.ErrorList{field.NotSupported(p, typ, []string{string(appsv1.RollingUpdateStatefulSetStrategyType)})}
}
