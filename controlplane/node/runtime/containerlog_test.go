package runtime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestContainerLogWriteAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	lf := &criLogFile{f: f}
	out, errOut := lf.stream(logStreamStdout), lf.stream(logStreamStderr)
	out.Write([]byte("one\ntw"))
	out.Write([]byte("o\n"))
	errOut.Write([]byte("oops\n"))
	time.Sleep(2 * time.Millisecond)
	mid := time.Now()
	out.Write([]byte("three\nfour\n"))
	lf.Close()

	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{name: "all", opts: LogOptions{TailLines: -1}, want: "one\ntwo\noops\nthree\nfour\n"},
		{name: "tail 2", opts: LogOptions{TailLines: 2}, want: "three\nfour\n"},
		{name: "tail 0", opts: LogOptions{TailLines: 0}, want: ""},
		{name: "tail more than there is", opts: LogOptions{TailLines: 50}, want: "one\ntwo\noops\nthree\nfour\n"},
		{name: "since", opts: LogOptions{TailLines: -1, Since: mid}, want: "three\nfour\n"},
		{name: "limit bytes", opts: LogOptions{TailLines: -1, LimitBytes: 6}, want: "one\ntw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := ReadContainerLog(context.Background(), path, tt.opts, &b, nil); err != nil {
				t.Fatalf("ReadContainerLog: %v", err)
			}
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
	t.Run("timestamps", func(t *testing.T) {
		var b bytes.Buffer
		if err := ReadContainerLog(context.Background(), path, LogOptions{TailLines: 1, Timestamps: true}, &b, nil); err != nil {
			t.Fatalf("ReadContainerLog: %v", err)
		}
		ts, line, _ := strings.Cut(b.String(), " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || line != "four\n" {
			t.Errorf("got %q, want <timestamp> four", b.String())
		}
	})
	t.Run("follow stops when the container is gone", func(t *testing.T) {
		var b bytes.Buffer
		if err := ReadContainerLog(context.Background(), path, LogOptions{TailLines: 1, Follow: true}, &b, func() bool { return false }); err != nil {
			t.Fatalf("ReadContainerLog: %v", err)
		}
		if b.String() != "four\n" {
			t.Errorf("got %q, want %q", b.String(), "four\n")
		}
	})
}

// Output that ends without a newline is logged once the container's
// output is drained (or its log closed), as a partial entry that readers
// show without a newline, as containerd's CRI logs it: the conformance
// spec's "echo -n DONE; false" has the termination message DONE.
func TestContainerLogDrainsAnUnfinishedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	lf := &criLogFile{f: f}
	done := make(chan struct{})
	lf.setIO(waiter(done))
	out := lf.stream(logStreamStdout)
	out.Write([]byte("first\nDO"))
	go func() {
		out.Write([]byte("NE"))
		close(done)
	}()
	lf.drain(time.Minute)
	read := func(opts LogOptions) string {
		var b bytes.Buffer
		if err := ReadContainerLog(context.Background(), path, opts, &b, nil); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got := read(LogOptions{TailLines: -1}); got != "first\nDONE" {
		t.Errorf("log %q, want \"first\\nDONE\"", got)
	}
	if got := read(LogOptions{TailLines: 1}); got != "DONE" {
		t.Errorf("last line %q, want DONE", got)
	}
	lf.drain(time.Minute) // again: nothing more
	out.Write([]byte("late"))
	lf.Close()
	if got := read(LogOptions{TailLines: -1}); got != "first\nDONElate" {
		t.Errorf("after close %q", got)
	}
}

// waiter is a task IO whose output is copied once done closes.
type waiter chan struct{}

func (w waiter) Wait() { <-w }
