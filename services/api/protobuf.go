package api

import (
	"encoding/json"
	"fmt"

	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protobufType is Kubernetes' protobuf encoding, which client-go's typed
// clients (kubectl's among them) send for built-in kinds.
const protobufType = "application/vnd.kubernetes.protobuf"

// protoCodec decodes the kinds this API takes in protobuf: for now the
// TokenRequest, so that `kubectl create token` works.
var protoCodec = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := authv1.AddToScheme(scheme); err != nil {
		panic(err) // a static registration: fails only if the types are broken
	}
	return protobuf.NewSerializer(scheme, scheme)
}()

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
