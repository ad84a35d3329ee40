package kinds

import (
	"encoding/base64"
	"encoding/json"
	"sort"

	"github.com/homeostat/homeostat/object"
)

// EnvVarSource is where a variable's value comes from: exactly one of these.
type EnvVarSource struct {
	ConfigMapKeyRef *KeyRef   `json:"configMapKeyRef,omitempty"`
	SecretKeyRef    *KeyRef   `json:"secretKeyRef,omitempty"`
	FieldRef        *FieldRef `json:"fieldRef,omitempty"`
}

// KeyRef names one key of a ConfigMap or Secret in the pod's namespace.
type KeyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

// FieldRef names a field of the pod (metadata.name, status.podIP, …).
type FieldRef struct {
	FieldPath string `json:"fieldPath"`
}

// EnvFromSource takes every key of a ConfigMap or Secret as a variable.
type EnvFromSource struct {
	Prefix       string    `json:"prefix,omitempty"`
	ConfigMapRef *LocalRef `json:"configMapRef,omitempty"`
	SecretRef    *LocalRef `json:"secretRef,omitempty"`
}

// LocalRef names an object in the pod's namespace.
type LocalRef struct {
	Name     string `json:"name"`
	Optional *bool  `json:"optional,omitempty"`
}

// VolumeMount puts a volume's files at MountPath in a container's view.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Volume is a set of files for a pod's containers: exactly one source.
type Volume struct {
	Name      string           `json:"name"`
	ConfigMap *ConfigMapVolume `json:"configMap,omitempty"`
	Secret    *SecretVolume    `json:"secret,omitempty"`
	EmptyDir  *EmptyDirVolume  `json:"emptyDir,omitempty"`
}

// ConfigMapVolume is a ConfigMap's keys as files.
type ConfigMapVolume struct {
	Name        string      `json:"name"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

// SecretVolume is a Secret's keys as files.
type SecretVolume struct {
	SecretName  string      `json:"secretName"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

// EmptyDirVolume is a directory that lives as long as the pod.
type EmptyDirVolume struct {
	Medium    string `json:"medium,omitempty"`
	SizeLimit any    `json:"sizeLimit,omitempty"`
}

// KeyToPath puts one key at a path of its own, with a mode of its own.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

// ConfigRefs are the ConfigMaps and Secrets a pod's spec refers to, by
// name, each once and in order: what its node must fetch before it starts.
func (s *PodSpec) ConfigRefs() (configMaps, secrets []string) {
	cms, secs := map[string]bool{}, map[string]bool{}
	for _, c := range append(append([]Container{}, s.InitContainers...), s.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				cms[r.Name] = true
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				secs[r.Name] = true
			}
		}
		for _, f := range c.EnvFrom {
			if f.ConfigMapRef != nil {
				cms[f.ConfigMapRef.Name] = true
			}
			if f.SecretRef != nil {
				secs[f.SecretRef.Name] = true
			}
		}
	}
	for _, v := range s.Volumes {
		if v.ConfigMap != nil {
			cms[v.ConfigMap.Name] = true
		}
		if v.Secret != nil {
			secs[v.Secret.SecretName] = true
		}
	}
	return sortedSet(cms), sortedSet(secs)
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ConfigData is the values of a ConfigMap (data and binaryData) or of a
// Secret (data, decoded from base64), by key.
func ConfigData(o *object.Object) map[string][]byte {
	out := map[string][]byte{}
	var strs map[string]string
	_ = json.Unmarshal(o.Fields["data"], &strs)
	secret := o.Kind == "Secret"
	for k, v := range strs {
		if !secret {
			out[k] = []byte(v)
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			out[k] = b
		}
	}
	var bin map[string]string
	_ = json.Unmarshal(o.Fields["binaryData"], &bin)
	for k, v := range bin {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			out[k] = b
		}
	}
	return out
}

// ProjectedVolume is one volume's files as a node writes them for a pod:
// paths relative to the volume, with contents and modes. An emptyDir has
// no files.
type ProjectedVolume struct {
	Name     string
	EmptyDir bool
	Files    map[string]ProjectedFile
}

// ProjectedFile is one file of a volume.
type ProjectedFile struct {
	Data []byte
	Mode uint32
}
