package node

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The files of a configMap, secret, downwardAPI or projected volume are
// laid out as the kubelet's AtomicWriter lays them out, so that a
// container reading them while they are updated sees the old set or the
// new one, never a mix:
//
//	<dir>/..2026_12_04_21_30_00.123456789/<files>   the payload
//	<dir>/..data -> ..2026_12_04_21_30_00.123456789
//	<dir>/<name> -> ..data/<name>                    each top-level entry
//
// An update writes a new payload directory, then renames a fresh ..data
// link over the old one (one atomic step), then fixes the top-level links
// and removes the old payload.
const atomicDataLink = "..data"

// writeAtomic makes dir hold exactly files, as above; it writes nothing
// and reports false when dir already holds them. With fsGroup, as the
// kubelet's AtomicWriter with its volumes' setPerms, the files' modes get
// the group's read bits and, before the new payload is swapped in, the
// volume's directory and all in it the group (setVolumeOwnership).
func writeAtomic(dir string, files []volumeFile, fsGroup *int64) (bool, error) {
	if fsGroup != nil {
		files = readableByGroup(files)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if payloadHolds(dir, files) {
		return false, nil
	}
	payload, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(payload, 0o755); err != nil {
		return false, err
	}
	if err := writeVolumeFiles(payload, files); err != nil {
		os.RemoveAll(payload)
		return false, err
	}
	if fsGroup != nil {
		if err := setVolumeOwnership(dir, *fsGroup, true); err != nil {
			os.RemoveAll(payload)
			return false, fmt.Errorf("failed to give the volume group %d: %w", *fsGroup, err)
		}
	}
	link := filepath.Join(dir, atomicDataLink)
	old, _ := os.Readlink(link)
	tmp := filepath.Join(dir, atomicDataLink+"_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(payload), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, link); err != nil {
		return false, err
	}
	top := map[string]bool{}
	for _, f := range files {
		name, _, _ := strings.Cut(strings.TrimPrefix(filepath.Clean("/"+f.path), "/"), "/")
		top[name] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		// A name no longer in the volume goes; one that is not a link
		// yet (the files of an earlier layout) is replaced by one.
		if !top[e.Name()] || e.Type()&fs.ModeSymlink == 0 {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return true, err
			}
		}
	}
	for name := range top {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(atomicDataLink, name), p); err != nil {
			return true, err
		}
	}
	if old != "" && old != filepath.Base(payload) && strings.HasPrefix(old, "..") {
		os.RemoveAll(filepath.Join(dir, old))
	}
	return true, nil
}

// payloadHolds reports whether dir's current payload is exactly files,
// contents and modes.
func payloadHolds(dir string, files []volumeFile) bool {
	target, err := os.Readlink(filepath.Join(dir, atomicDataLink))
	if err != nil {
		return false
	}
	payload := filepath.Join(dir, target)
	want := map[string]volumeFile{}
	for _, f := range files {
		want[strings.TrimPrefix(filepath.Clean("/"+f.path), "/")] = f
	}
	n := 0
	err = filepath.WalkDir(payload, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(payload, p)
		f, ok := want[rel]
		if !ok {
			return fs.ErrNotExist
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.mode.Perm() {
			return fs.ErrInvalid
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, f.data) {
			return fs.ErrInvalid
		}
		n++
		return nil
	})
	return err == nil && n == len(want)
}
