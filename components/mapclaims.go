package components

import "strings"

// podTitle is a pod dot's tooltip on the map: namespace/name, its phase
// and the claims it mounts.
func podTitle(p PodChip) string {
	s := p.Namespace + "/" + p.Name + ": " + p.Phase
	if len(p.Claims) > 0 {
		s += " · PersistentVolumeClaim " + strings.Join(p.Claims, ", ")
	}
	return s
}
