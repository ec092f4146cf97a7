package runtime

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ContainerStats is one reading of a container's (or the node's) CPU and
// memory, as the kubelet's summary API reports them.
type ContainerStats struct {
	Time time.Time
	// CPUNanoSeconds is the CPU time used since the start, cumulative.
	CPUNanoSeconds uint64
	// MemoryUsage is all memory charged, page cache included.
	MemoryUsage uint64
	// MemoryWorkingSet is the usage minus inactive file pages: what the
	// kubelet reports as the working set and evicts on.
	MemoryWorkingSet uint64
}

// CgroupRoot is where cgroup file systems are mounted.
const CgroupRoot = "/sys/fs/cgroup"

// ReadCgroupStats reads the CPU and memory of the cgroup at path (as in an
// OCI spec's linux.cgroupsPath) below root: cgroup v2 (cpu.stat usage_usec,
// memory.current and memory.stat inactive_file) when root is a unified
// hierarchy, else v1 (cpuacct.usage, memory.usage_in_bytes and memory.stat
// total_inactive_file).
func ReadCgroupStats(root, path string) (ContainerStats, error) {
	st := ContainerStats{Time: time.Now()}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dir := filepath.Join(root, path)
		cpu, err := readKeyed(filepath.Join(dir, "cpu.stat"), "usage_usec")
		if err != nil {
			return ContainerStats{}, err
		}
		st.CPUNanoSeconds = cpu * 1000
		if st.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
			return ContainerStats{}, err
		}
		inactive, _ := readKeyed(filepath.Join(dir, "memory.stat"), "inactive_file")
		st.MemoryWorkingSet = workingSet(st.MemoryUsage, inactive)
		return st, nil
	}
	cpu, err := readUint(filepath.Join(root, "cpuacct", path, "cpuacct.usage"))
	if err != nil {
		return ContainerStats{}, err
	}
	st.CPUNanoSeconds = cpu
	if st.MemoryUsage, err = readUint(filepath.Join(root, "memory", path, "memory.usage_in_bytes")); err != nil {
		return ContainerStats{}, err
	}
	inactive, _ := readKeyed(filepath.Join(root, "memory", path, "memory.stat"), "total_inactive_file")
	st.MemoryWorkingSet = workingSet(st.MemoryUsage, inactive)
	return st, nil
}

// ReadNodeStats reads the host's CPU time (/proc/stat: every state but
// idle and iowait) and memory (/proc/meminfo: usage is MemTotal minus
// MemFree, the working set that minus Inactive(file)).
func ReadNodeStats(procRoot string) (ContainerStats, error) {
	st := ContainerStats{Time: time.Now()}
	data, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return ContainerStats{}, fmt.Errorf("failed to read the host's CPU time: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return ContainerStats{}, fmt.Errorf("failed to read the host's CPU time: unexpected %q", line)
	}
	var jiffies uint64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		n, _ := strconv.ParseUint(f, 10, 64)
		jiffies += n
	}
	// USER_HZ is 100 on every Linux architecture Kubernetes runs on.
	st.CPUNanoSeconds = jiffies * uint64(time.Second/100)
	mem, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return ContainerStats{}, fmt.Errorf("failed to read the host's memory: %w", err)
	}
	info := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(mem))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseUint(f[0], 10, 64)
		info[name] = n * 1024
	}
	if info["MemTotal"] == 0 {
		return ContainerStats{}, fmt.Errorf("failed to read the host's memory: no MemTotal in %s", filepath.Join(procRoot, "meminfo"))
	}
	st.MemoryUsage = info["MemTotal"] - min(info["MemFree"], info["MemTotal"])
	st.MemoryWorkingSet = workingSet(st.MemoryUsage, info["Inactive(file)"])
	return st, nil
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

func readUint(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads the value of key in a "key value" per line file.
func readKeyed(path, key string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("failed to read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("failed to read %s: no %s", path, key)
}

// ContainerStats reads a container's CPU and memory from its cgroup.
func (c *Containerd) ContainerStats(ctx context.Context, id string) (ContainerStats, error) {
	ctr, err := c.client.LoadContainer(ctx, id)
	if err != nil {
		return ContainerStats{}, fmt.Errorf("failed to load container %q: %w", id, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return ContainerStats{}, fmt.Errorf("failed to read the spec of container %q: %w", id, err)
	}
	if spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return ContainerStats{}, fmt.Errorf("container %q has no cgroup", id)
	}
	return ReadCgroupStats(CgroupRoot, spec.Linux.CgroupsPath)
}
