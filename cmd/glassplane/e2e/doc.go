// Package e2e runs the built glassplane binary (GLASSPLANE_BIN, or one built
// once for the package) as a user would and drives it with real kubectl,
// client-go, containerd, Debian's etcd and chromium. Tests that need
// containerd, etcd or chromium fail when CI=true and they are missing; outside
// CI they skip with the reason.
package e2e
