package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// kubeTypes are Kubernetes' own types of the built-in kinds: a field they
// declare and Homeostat's schema does not is one Homeostat ignores, not one
// the client made up.
var kubeTypes = map[string]reflect.Type{
	"v1/Pod":                            reflect.TypeFor[corev1.Pod](),
	"v1/Namespace":                      reflect.TypeFor[corev1.Namespace](),
	"v1/Node":                           reflect.TypeFor[corev1.Node](),
	"v1/Event":                          reflect.TypeFor[corev1.Event](),
	"v1/ServiceAccount":                 reflect.TypeFor[corev1.ServiceAccount](),
	"v1/ConfigMap":                      reflect.TypeFor[corev1.ConfigMap](),
	"v1/Secret":                         reflect.TypeFor[corev1.Secret](),
	"v1/Service":                        reflect.TypeFor[corev1.Service](),
	"apps/v1/Deployment":                reflect.TypeFor[appsv1.Deployment](),
	"apps/v1/ReplicaSet":                reflect.TypeFor[appsv1.ReplicaSet](),
	"apps/v1/DaemonSet":                 reflect.TypeFor[appsv1.DaemonSet](),
	"batch/v1/Job":                      reflect.TypeFor[batchv1.Job](),
	"coordination.k8s.io/v1/Lease":      reflect.TypeFor[coordinationv1.Lease](),
	"events.k8s.io/v1/Event":            reflect.TypeFor[eventsv1.Event](),
	"rbac.authorization.k8s.io/v1/Role": reflect.TypeFor[rbacv1.Role](),
	"rbac.authorization.k8s.io/v1/ClusterRole":        reflect.TypeFor[rbacv1.ClusterRole](),
	"rbac.authorization.k8s.io/v1/RoleBinding":        reflect.TypeFor[rbacv1.RoleBinding](),
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": reflect.TypeFor[rbacv1.ClusterRoleBinding](),
}

func kubeType(res *schemas.Resource) reflect.Type {
	if res.Custom {
		return nil
	}
	return kubeTypes[res.APIVersion()+"/"+res.Kind]
}

// Field validation directives, as Kubernetes' fieldValidation parameter.
const (
	validationStrict = "Strict"
	validationWarn   = "Warn"
	validationIgnore = "Ignore"
)

func fieldValidation(r *http.Request) (string, *apiError) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "":
		return validationWarn, nil // Kubernetes' default
	case validationStrict, validationWarn, validationIgnore:
		return v, nil
	default:
		return "", badRequest("fieldValidation=%q: must be one of Ignore, Warn or Strict", v)
	}
}

// checkFields prunes from doc what the kind's schema does not declare and
// answers for it as Kubernetes does: a field Kubernetes has and Homeostat
// does not act on is dropped with a Warning whatever the directive;
// unknown and duplicate fields (dups, found in the raw body) are a 400
// under Strict, a Warning under Warn, nothing under Ignore.
func (s *Service) checkFields(w http.ResponseWriter, r *http.Request, ref *resourceRef, doc map[string]any, dups []string) *apiError {
	mode, e := fieldValidation(r)
	if e != nil {
		return e
	}
	d, err := s.openapi.Get()
	if err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	pr := d.Prune(ref.res, doc, kubeType(ref.res))
	for _, f := range pr.Ignored {
		warn(w, fmt.Sprintf("%s: Homeostat does not act on this field; it was not stored", f))
	}
	for _, f := range pr.Inert {
		warn(w, fmt.Sprintf("%s: %s", f.Path, f.Why))
	}
	var msgs []string
	var causes []object.StatusCause
	for _, f := range pr.Unknown {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", f))
		causes = append(causes, object.StatusCause{Type: "FieldValueUnknown", Field: f, Message: "unknown field"})
	}
	for _, f := range dups {
		msgs = append(msgs, fmt.Sprintf("duplicate field %q", f))
		causes = append(causes, object.StatusCause{Type: "FieldValueDuplicate", Field: f, Message: "duplicate field"})
	}
	switch {
	case len(msgs) == 0 || mode == validationIgnore:
	case mode == validationStrict:
		e := badRequest("strict decoding error: %s", strings.Join(msgs, ", "))
		e.details = &object.StatusDetails{Name: ref.name, Group: ref.group, Kind: ref.plural, Causes: causes}
		return e
	default:
		for _, m := range msgs {
			warn(w, m)
		}
	}
	return nil
}

// warn adds a Warning header, as Kubernetes does (code 299).
func warn(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
}
