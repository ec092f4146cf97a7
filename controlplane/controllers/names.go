package controllers

import (
	"fmt"
	"slices"
	"strings"
)

// KnownControllers are the names Config.Controllers takes, in start order:
// kube-controller-manager's names for the same controllers.
func KnownControllers() []string {
	var names []string
	for _, c := range (&Manager{}).constructors(nil, nil, nil) {
		names = append(names, c.name)
	}
	return names
}

// enabledControllers reads a --controllers list as kube-controller-manager
// does: an empty list or "*" turns every controller on, "-name" turns one
// off (and wins over "*"), "name" turns one on. A name that is not a known
// controller is refused.
func enabledControllers(list []string) (func(string) bool, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	known := KnownControllers()
	on, off, star := map[string]bool{}, map[string]bool{}, false
	for _, raw := range list {
		name := strings.TrimSpace(raw)
		switch {
		case name == "*":
			star = true
			continue
		case strings.HasPrefix(name, "-"):
			name = name[1:]
			off[name] = true
		default:
			on[name] = true
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("%q is not in the list of known controllers: %s", name, strings.Join(known, ", "))
		}
	}
	return func(name string) bool {
		if off[name] {
			return false
		}
		return star || on[name]
	}, nil
}

// CheckControllers reports whether list is a valid --controllers value.
func CheckControllers(list []string) error {
	_, err := enabledControllers(list)
	return err
}
