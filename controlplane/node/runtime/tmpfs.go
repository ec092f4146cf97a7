package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// MountTmpfs mounts a tmpfs of at most size bytes (no limit but the
// kernel's default, half the memory, when 0) on dir, for an emptyDir with
// medium Memory. A dir that already is a mount point (the agent restarted)
// is left as it is. RemovePod unmounts it.
func MountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("failed to create %q: %w", dir, err)
	}
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	opts := "mode=0777"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("failed to mount tmpfs on %q: %w", dir, err)
	}
	return nil
}

// isMountPoint says whether dir is on another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, fmt.Errorf("failed to stat %q: %w", dir, err)
	}
	if err := syscall.Stat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("failed to stat %q: %w", filepath.Dir(dir), err)
	}
	return st.Dev != parent.Dev, nil
}

// unmountUnder detaches every mount at or below dir, deepest first, as
// /proc/self/mountinfo lists them.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("failed to read mounts: %w", err)
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt/point rw ...": the fifth field is the mount point.
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("failed to unmount %q: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
