package scheduler

import "github.com/homeostat/homeostat/object"

// CachedPod is the pod the replica's cache keeps for key.
func (s *Service) CachedPod(key string) (*object.Object, bool) { return s.pods.Get(key) }
