package api

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protobufType is Kubernetes' protobuf encoding, which client-go's typed
// clients (kubectl's among them) send for built-in kinds.
const protobufType = "application/vnd.kubernetes.protobuf"

// protoScheme holds the types this API reads and writes in protobuf: the
// built-in kinds in Kubernetes' own types (k8s.io/api), and the
// TokenRequest.
var protoScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{authv1.AddToScheme, authzv1.AddToScheme, corev1.AddToScheme,
		appsv1.AddToScheme, batchv1.AddToScheme, rbacv1.AddToScheme, autoscalingv1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // a static registration: fails only if the types are broken
		}
	}
	return scheme
}()

// protoCodec reads and writes protoScheme's types.
var protoCodec = protobuf.NewSerializer(protoScheme, protoScheme)

// protoToJSON reads an object sent in protobuf as the JSON of Kubernetes'
// type for it, which the API then takes as any JSON body.
func protoToJSON(data []byte) ([]byte, error) {
	obj, gvk, err := protoCodec.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}

// decodeTokenRequestProto reads a TokenRequest sent in protobuf.
func decodeTokenRequestProto(data []byte) (*tokenRequest, error) {
	obj, gvk, err := protoCodec.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	tr, ok := obj.(*authv1.TokenRequest)
	if !ok {
		return nil, fmt.Errorf("a %s, not a TokenRequest", gvk)
	}
	out := &tokenRequest{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	out.Spec.Audiences = tr.Spec.Audiences
	out.Spec.ExpirationSeconds = tr.Spec.ExpirationSeconds
	if tr.Spec.BoundObjectRef != nil {
		if out.Spec.BoundObjectRef, err = json.Marshal(tr.Spec.BoundObjectRef); err != nil {
			return nil, err
		}
	}
	return out, nil
}
