package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadCgroupStats(t *testing.T) {
	const path = "/k8s.io/abc"
	tests := []struct {
		name               string
		files              map[string]string
		wantCPU, wantUsage uint64
		wantWorkingSet     uint64
		wantErr            bool
	}{
		{
			name: "cgroup v2",
			files: map[string]string{
				"cgroup.controllers":        "cpu memory",
				"k8s.io/abc/cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
				"k8s.io/abc/memory.current": "10485760\n",
				"k8s.io/abc/memory.stat":    "anon 4194304\nfile 6291456\ninactive_file 2097152\nactive_file 4194304\n",
			},
			wantCPU: 1500000000, wantUsage: 10 << 20, wantWorkingSet: 8 << 20,
		},
		{
			name: "cgroup v1",
			files: map[string]string{
				"cpuacct/k8s.io/abc/cpuacct.usage":        "2500000000\n",
				"memory/k8s.io/abc/memory.usage_in_bytes": "4194304\n",
				"memory/k8s.io/abc/memory.stat":           "cache 1048576\ninactive_file 999\ntotal_inactive_file 1048576\n",
			},
			wantCPU: 2500000000, wantUsage: 4 << 20, wantWorkingSet: 3 << 20,
		},
		{
			name: "inactive file above usage reads as zero working set",
			files: map[string]string{
				"cpuacct/k8s.io/abc/cpuacct.usage":        "1\n",
				"memory/k8s.io/abc/memory.usage_in_bytes": "100\n",
				"memory/k8s.io/abc/memory.stat":           "total_inactive_file 200\n",
			},
			wantCPU: 1, wantUsage: 100, wantWorkingSet: 0,
		},
		{name: "no cgroup", files: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			st, err := ReadCgroupStats(root, path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReadCgroupStats err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if st.CPUNanoSeconds != tt.wantCPU || st.MemoryUsage != tt.wantUsage || st.MemoryWorkingSet != tt.wantWorkingSet {
				t.Fatalf("ReadCgroupStats = %+v, want cpu %d usage %d working set %d", st, tt.wantCPU, tt.wantUsage, tt.wantWorkingSet)
			}
		})
	}
}

func TestReadNodeStats(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		// user nice system idle iowait irq softirq steal guest guest_nice
		"stat":    "cpu  100 20 30 5000 40 5 5 0 7 0\ncpu0 50 10 15 2500 20 2 3 0 0 0\n",
		"meminfo": "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    500 kB\nInactive(file):  100 kB\n",
	})
	st, err := ReadNodeStats(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(100+20+30+5+5+0) * 10_000_000; st.CPUNanoSeconds != want {
		t.Errorf("CPU = %d ns, want %d", st.CPUNanoSeconds, want)
	}
	if st.MemoryUsage != 800*1024 || st.MemoryWorkingSet != 700*1024 {
		t.Errorf("memory usage %d working set %d, want %d and %d", st.MemoryUsage, st.MemoryWorkingSet, 800*1024, 700*1024)
	}
	if _, err := ReadNodeStats(t.TempDir()); err == nil {
		t.Error("ReadNodeStats of an empty directory: no error")
	}
}

func TestReadNodeStatsOfThisHost(t *testing.T) {
	st, err := ReadNodeStats("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUNanoSeconds == 0 || st.MemoryWorkingSet == 0 {
		t.Fatalf("this host reads as %+v", st)
	}
}
