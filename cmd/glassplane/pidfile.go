package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pidFileName is the file in the data directory that names the process of
// the `glassplane up` running with it. That process holds an exclusive
// flock on it while it runs, so a file left by a crash (or a PID the
// system has given to another process since) never counts as running.
const pidFileName = "glassplane.pid"

// lockDataDir claims dataDir for this `glassplane up`: it writes and locks
// <dataDir>/glassplane.pid, or says which process already runs with it.
// The returned function removes the file and releases the lock.
func lockDataDir(dataDir string) (release func(), err error) {
	path := filepath.Join(dataDir, pidFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("glassplane up already runs with data directory %s (pid %s); \"glassplane down --data-dir %s\" stops it", dataDir, readPID(path), dataDir)
		}
		return nil, fmt.Errorf("failed to lock %q: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to write %q: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to write %q: %w", path, err)
	}
	return func() {
		// Removed before the lock goes, so a file that exists unlocked
		// was left by a process that did not exit cleanly.
		os.Remove(path)
		f.Close()
	}, nil
}

// runningUp returns the PID of the `glassplane up` running with dataDir
// and its open pid file, whose lock the caller can take once that process
// has exited; 0 and nil when none runs.
func runningUp(dataDir string) (int, *os.File, error) {
	path := filepath.Join(dataDir, pidFileName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("failed to open %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		f.Close()
		return 0, nil, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return 0, nil, fmt.Errorf("failed to check the lock of %q: %w", path, err)
	}
	pid, err := strconv.Atoi(readPID(path))
	if err != nil || pid <= 0 {
		f.Close()
		return 0, nil, fmt.Errorf("%q is locked but names no process: %q", path, readPID(path))
	}
	return pid, f, nil
}

// readPID is the pid file's content, trimmed ("?" when unreadable).
func readPID(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
