package web

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/glassplane/glassplane/components"
)

// summaryVolume is the part of a pod's volume the overview reads: the
// claim it names, if any.
type summaryVolume struct {
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim"`
}

// summaryClaims are the PersistentVolumeClaims a pod's volumes name.
func summaryClaims(s *objectSummary) []string {
	var out []string
	for _, v := range s.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil && c.ClaimName != "" {
			out = append(out, c.ClaimName)
		}
	}
	return out
}

// orderPods sorts pods by namespace, then by name with a trailing ordinal
// compared as a number: a StatefulSet's db-0, db-1, …, db-10 in the order
// the controller makes them (db-10 after db-9, not after db-1).
func orderPods(pods []components.PodChip) {
	slices.SortStableFunc(pods, func(a, b components.PodChip) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return compareOrdinal(a.Name, b.Name)
	})
}

// compareOrdinal compares two names as <prefix>-<ordinal> when both end
// so: by prefix, then ordinal; otherwise as strings.
func compareOrdinal(a, b string) int {
	pa, na, okA := splitOrdinal(a)
	pb, nb, okB := splitOrdinal(b)
	if okA && okB {
		if c := cmp.Compare(pa, pb); c != 0 {
			return c
		}
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

// splitOrdinal splits "db-12" into "db" and 12.
func splitOrdinal(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 || name[i+1] == '+' {
		return "", 0, false
	}
	return name[:i], n, true
}
