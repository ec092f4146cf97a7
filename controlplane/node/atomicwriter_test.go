package node

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readVolume returns the volume's files as a reader sees them (through the
// top-level links), path=content, sorted, and its ".." payload directories.
func readVolume(t *testing.T, dir string) (files []string, payloads []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(rel, "..") {
			if d.IsDir() && !strings.Contains(rel, string(filepath.Separator)) {
				payloads = append(payloads, rel)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := os.Stat(p) // through the link
		if err != nil {
			return err
		}
		if info.IsDir() {
			return walkInto(t, p, rel, &files)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, rel+"="+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files, payloads
}

func walkInto(t *testing.T, p, rel string, files *[]string) error {
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(p, e.Name()))
		if err != nil {
			return err
		}
		*files = append(*files, filepath.Join(rel, e.Name())+"="+string(b))
	}
	return nil
}

// TestWriteAtomic: the kubelet's layout; an unchanged set writes nothing;
// a change swaps the payload (the old one goes), a key that goes loses its
// link, and a directory of plain files (an earlier layout) is taken over.
func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	v1 := []volumeFile{{path: "a", data: []byte("1"), mode: 0o644}, {path: "sub/b", data: []byte("2"), mode: 0o600}}
	changed, err := writeAtomic(dir, v1, nil)
	if err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	files, payloads := readVolume(t, dir)
	if !slices.Equal(files, []string{"a=1", "sub/b=2"}) || len(payloads) != 1 {
		t.Fatalf("after the first write: %v, payloads %v", files, payloads)
	}
	if target, err := os.Readlink(filepath.Join(dir, "a")); err != nil || target != "..data/a" {
		t.Errorf("a links to %q (%v), want ..data/a", target, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "sub", "b")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("sub/b mode: %v %v", info, err)
	}
	if changed, err := writeAtomic(dir, v1, nil); err != nil || changed {
		t.Errorf("the same files again: changed %v, %v", changed, err)
	}
	first := payloads[0]

	v2 := []volumeFile{{path: "a", data: []byte("one")}, {path: "c", data: []byte("3")}}
	v2[0].mode, v2[1].mode = 0o644, 0o644
	if changed, err := writeAtomic(dir, v2, nil); err != nil || !changed {
		t.Fatalf("second write: %v %v", changed, err)
	}
	files, payloads = readVolume(t, dir)
	if !slices.Equal(files, []string{"a=one", "c=3"}) || len(payloads) != 1 || payloads[0] == first {
		t.Errorf("after the change: %v, payloads %v (first %s)", files, payloads, first)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("sub, gone from the volume, is still there: %v", err)
	}
	if changed, err := writeAtomic(dir, []volumeFile{{path: "a", data: []byte("one"), mode: 0o400}, {path: "c", data: []byte("3"), mode: 0o644}}, nil); err != nil || !changed {
		t.Errorf("a mode change: changed %v, %v", changed, err)
	}

	plain := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, "a"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeAtomic(plain, v2, nil); err != nil {
		t.Fatal(err)
	}
	if files, _ := readVolume(t, plain); !slices.Equal(files, []string{"a=one", "c=3"}) {
		t.Errorf("a directory of plain files after the write: %v", files)
	}

	empty := filepath.Join(t.TempDir(), "optional")
	if changed, err := writeAtomic(empty, []volumeFile{}, nil); err != nil || !changed {
		t.Fatalf("an empty volume: %v %v", changed, err)
	}
	if changed, _ := writeAtomic(empty, []volumeFile{}, nil); changed {
		t.Error("an empty volume written again changed")
	}
	if files, _ := readVolume(t, empty); len(files) != 0 {
		t.Errorf("an empty volume holds %v", files)
	}
}
