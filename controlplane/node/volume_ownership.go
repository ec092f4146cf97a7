package node

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// The group bits the kubelet's SetVolumeOwnership (pkg/volume/
// volume_linux.go) adds for a pod's fsGroup: read and write on a
// read-write volume's files, read on a read-only one's (configMap,
// secret, downwardAPI, projected), and search on directories.
const (
	ownershipReadWrite os.FileMode = 0o660
	ownershipReadOnly  os.FileMode = 0o440
	ownershipExec      os.FileMode = 0o110
)

// podFSGroup is the pod's securityContext.fsGroup, nil when unset.
func podFSGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// setVolumeOwnership gives dir and everything under it (symlinks are not
// followed) the group fsGroup and lets that group use them, as the
// kubelet does: files get ownershipReadOnly (readOnly) or
// ownershipReadWrite added to their modes, directories that and
// ownershipExec and setgid, so that files made in them later get the
// group too. A file that goes meanwhile (a container's, in an emptyDir)
// is not an error.
func setVolumeOwnership(dir string, fsGroup int64, readOnly bool) error {
	mask := ownershipReadWrite
	if readOnly {
		mask = ownershipReadOnly
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			err = changeOwnership(p, d, int(fsGroup), mask)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}

func changeOwnership(p string, d fs.DirEntry, gid int, mask os.FileMode) error {
	if err := os.Lchown(p, -1, gid); err != nil {
		return err
	}
	if d.Type()&fs.ModeSymlink != 0 {
		return nil
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	if d.IsDir() {
		mask |= ownershipExec | os.ModeSetgid
	}
	return os.Chmod(p, info.Mode()|mask)
}

// readableByGroup returns files with the bits setVolumeOwnership adds to
// a read-only volume's files, so that they are written (and compared by
// payloadHolds) with the modes they end up with.
func readableByGroup(files []volumeFile) []volumeFile {
	out := make([]volumeFile, len(files))
	for i, f := range files {
		f.mode |= ownershipReadOnly
		out[i] = f
	}
	return out
}
