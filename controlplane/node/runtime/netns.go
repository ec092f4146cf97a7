package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps named network namespaces.
const netnsDir = "/var/run/netns"

// NetnsName is the name of a pod's network namespace.
func NetnsName(podUID string) string { return "glassplane-" + podUID }

// NetnsPath is the bind-mounted file of a pod's network namespace.
func NetnsPath(podUID string) string { return filepath.Join(netnsDir, NetnsName(podUID)) }

// netnsDirShared makes netnsDir a shared mount once per process, as `ip
// netns add` does, so that namespaces pinned there show in every mount
// namespace.
var netnsDirShared = sync.OnceValue(func() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("failed to create %q: %w", netnsDir, err)
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: bind it onto itself first.
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("failed to bind-mount %q: %w", netnsDir, err)
		}
		err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("failed to make %q a shared mount: %w", netnsDir, err)
	}
	return nil
})

// ensureNetns creates the pod's network namespace with loopback up,
// pinned by a bind mount at NetnsPath like `ip netns add`, but in this
// process: pods start in bursts, and two runs of ip per pod cost more CPU
// than the namespace itself. An existing namespace is kept.
func ensureNetns(podUID string) (retErr error) {
	path := NetnsPath(podUID)
	if isNetns(path) {
		return nil
	}
	if err := netnsDirShared(); err != nil {
		return err
	}
	// A file left without its mount (a crash between the two) is replaced.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove stale network namespace file %q: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("failed to create network namespace file %q: %w", path, err)
	}
	f.Close()
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, removeNetns(podUID))
		}
	}()
	name := NetnsName(podUID)
	unshare := func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("failed to create network namespace %q: %w", name, err)
		}
		return nil
	}
	return onSwitchedThread(name, unshare, func() error { return pinAndUp(path) })
}

// onSwitchedThread runs fn on a locked OS thread that enter has moved into
// another network namespace (named name in errors), then moves the thread
// back. Namespace switches apply to one OS thread only: the thread is
// unlocked once it is back, and if going back fails it is never unlocked,
// so it ends with its goroutine instead of serving others.
func onSwitchedThread(name string, enter, fn func() error) error {
	errCh := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			goruntime.UnlockOSThread()
			errCh <- fmt.Errorf("failed to open the thread's network namespace: %w", err)
			return
		}
		defer self.Close()
		if err := enter(); err != nil {
			goruntime.UnlockOSThread()
			errCh <- err
			return
		}
		fnErr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errCh <- errors.Join(fnErr, fmt.Errorf("failed to leave network namespace %q: %w", name, err))
			return
		}
		goruntime.UnlockOSThread()
		errCh <- fnErr
	}()
	return <-errCh
}

// pinAndUp bind-mounts the calling thread's network namespace at path and
// sets its loopback interface up.
func pinAndUp(path string) error {
	ns := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err := unix.Mount(ns, path, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("failed to pin network namespace at %q: %w", path, err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to open a socket in network namespace %q: %w", path, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to read loopback flags in network namespace %q: %w", path, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to set loopback up in network namespace %q: %w", path, err)
	}
	return nil
}

// isNetns says whether path is a pinned network namespace (a file on nsfs).
func isNetns(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// removeNetns deletes the pod's network namespace if it exists, as `ip
// netns delete` does: the pin is unmounted lazily and its file removed.
func removeNetns(podUID string) error {
	path := NetnsPath(podUID)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("failed to unmount network namespace %q: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to delete network namespace %q: %w", path, err)
	}
	return nil
}
