package framework

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// PluginFactory builds a plugin from its arguments (nil means defaults).
type PluginFactory func(ctx context.Context, args runtime.Object, h Handle) (Plugin, error)

// Registry maps plugin names to their factories.
type Registry map[string]PluginFactory

// Register adds a factory under name; the name must be new.
func (r Registry) Register(name string, factory PluginFactory) error {
	if _, ok := r[name]; ok {
		return fmt.Errorf("failed to register plugin %q: a plugin with that name already exists", name)
	}
	r[name] = factory
	return nil
}

// Merge adds every factory of in to r; names must not collide.
func (r Registry) Merge(in Registry) error {
	for name, factory := range in {
		if err := r.Register(name, factory); err != nil {
			return err
		}
	}
	return nil
}
