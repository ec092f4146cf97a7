package rbac

import (
	"sort"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cache holds every Role, ClusterRole, RoleBinding and ClusterRoleBinding in
// memory. The API server feeds it from the storage watch; the authorizer
// reads it on every request. It is safe for concurrent use.
type Cache struct {
	mu                  sync.RWMutex            // guards the fields below
	roles               map[string]*rbacv1.Role // by namespace/name
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[string]map[string]*rbacv1.RoleBinding // by namespace, then name
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	// Sorted snapshots of the bindings, rebuilt after a change; readers
	// share them and must not modify them.
	roleBindingList        map[string][]*rbacv1.RoleBinding
	clusterRoleBindingList []*rbacv1.ClusterRoleBinding
	ready                  chan struct{}
	readyOnce              sync.Once
}

// NewCache returns an empty cache that is not ready yet.
func NewCache() *Cache {
	return &Cache{
		roles:               map[string]*rbacv1.Role{},
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		roleBindings:        map[string]map[string]*rbacv1.RoleBinding{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
		roleBindingList:     map[string][]*rbacv1.RoleBinding{},
		ready:               make(chan struct{}),
	}
}

// Ready is closed once MarkReady was called: the cache holds a full list.
func (c *Cache) Ready() <-chan struct{} { return c.ready }

// MarkReady closes Ready.
func (c *Cache) MarkReady() { c.readyOnce.Do(func() { close(c.ready) }) }

// Put adds or replaces a Role, ClusterRole, RoleBinding or ClusterRoleBinding;
// other objects are ignored.
func (c *Cache) Put(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *rbacv1.Role:
		c.roles[o.Namespace+"/"+o.Name] = o
	case *rbacv1.ClusterRole:
		c.clusterRoles[o.Name] = o
	case *rbacv1.RoleBinding:
		if c.roleBindings[o.Namespace] == nil {
			c.roleBindings[o.Namespace] = map[string]*rbacv1.RoleBinding{}
		}
		c.roleBindings[o.Namespace][o.Name] = o
		c.rebuildRoleBindings(o.Namespace)
	case *rbacv1.ClusterRoleBinding:
		c.clusterRoleBindings[o.Name] = o
		c.rebuildClusterRoleBindings()
	}
}

// Remove deletes the object with obj's kind, namespace and name.
func (c *Cache) Remove(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *rbacv1.Role:
		delete(c.roles, o.Namespace+"/"+o.Name)
	case *rbacv1.ClusterRole:
		delete(c.clusterRoles, o.Name)
	case *rbacv1.RoleBinding:
		delete(c.roleBindings[o.Namespace], o.Name)
		c.rebuildRoleBindings(o.Namespace)
	case *rbacv1.ClusterRoleBinding:
		delete(c.clusterRoleBindings, o.Name)
		c.rebuildClusterRoleBindings()
	}
}

// Replace swaps every object of the kind of example for objs (a relist).
func (c *Cache) Replace(example runtime.Object, objs []runtime.Object) {
	c.mu.Lock()
	switch example.(type) {
	case *rbacv1.Role:
		c.roles = map[string]*rbacv1.Role{}
	case *rbacv1.ClusterRole:
		c.clusterRoles = map[string]*rbacv1.ClusterRole{}
	case *rbacv1.RoleBinding:
		c.roleBindings = map[string]map[string]*rbacv1.RoleBinding{}
		c.roleBindingList = map[string][]*rbacv1.RoleBinding{}
	case *rbacv1.ClusterRoleBinding:
		c.clusterRoleBindings = map[string]*rbacv1.ClusterRoleBinding{}
		c.clusterRoleBindingList = nil
	}
	c.mu.Unlock()
	for _, o := range objs {
		c.Put(o)
	}
}

func (c *Cache) rebuildRoleBindings(namespace string) {
	byName := c.roleBindings[namespace]
	if len(byName) == 0 {
		delete(c.roleBindings, namespace)
		delete(c.roleBindingList, namespace)
		return
	}
	list := make([]*rbacv1.RoleBinding, 0, len(byName))
	for _, b := range byName {
		list = append(list, b)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	c.roleBindingList[namespace] = list
}

func (c *Cache) rebuildClusterRoleBindings() {
	list := make([]*rbacv1.ClusterRoleBinding, 0, len(c.clusterRoleBindings))
	for _, b := range c.clusterRoleBindings {
		list = append(list, b)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	c.clusterRoleBindingList = list
}

var (
	roleResource        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "role"}
	clusterRoleResource = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrole"}
)

// GetRole implements RoleGetter; the error is Kubernetes' NotFound.
func (c *Cache) GetRole(namespace, name string) (*rbacv1.Role, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r, ok := c.roles[namespace+"/"+name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(roleResource, name)
}

// GetClusterRole implements RoleGetter; the error is Kubernetes' NotFound.
func (c *Cache) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r, ok := c.clusterRoles[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(clusterRoleResource, name)
}

// ListRoleBindings returns the namespace's role bindings sorted by name.
func (c *Cache) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.roleBindingList[namespace]
}

// ListClusterRoleBindings returns every cluster role binding sorted by name.
func (c *Cache) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.clusterRoleBindingList
}
