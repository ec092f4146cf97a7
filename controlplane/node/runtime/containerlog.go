package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// Container logs are kept in the CRI log format kubelet reads, one file per
// container instance, both streams interleaved:
//
//	2016-10-06T00:17:09.669794202Z stdout F a whole line
//	2016-10-06T00:17:09.669794203Z stderr P the start of a long line
const (
	logStreamStdout = "stdout"
	logStreamStderr = "stderr"
	// maxLogLine is where a line without a newline is cut into a partial
	// ("P") entry.
	maxLogLine = 16 * 1024
	// followPoll is how often a followed log is checked for new lines.
	followPoll = 100 * time.Millisecond
)

// criLogFile is one container's log file shared by its two streams.
type criLogFile struct {
	mu sync.Mutex // guards writes to f, and the fields below
	f  *os.File
	// streams are the writers stream handed out, whose unfinished lines
	// drain writes.
	streams []*criStreamWriter
	// io is the task's, once known: its Wait returns when the output has
	// been copied.
	io      interface{ Wait() }
	drained bool
}

// setIO records the task's IO, which drain waits for.
func (l *criLogFile) setIO(io interface{ Wait() }) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.io = io
}

// drain is for a container that exited: it waits (at most wait, once) for
// its output to be copied, then logs what is left of a line without a
// newline, as containerd's CRI logs the end of a container's output
// ("echo -n DONE" logs DONE, and kubectl logs shows DONE).
func (l *criLogFile) drain(wait time.Duration) {
	l.mu.Lock()
	taskIO, first := l.io, !l.drained
	l.drained = true
	streams := slices.Clone(l.streams)
	l.mu.Unlock()
	if taskIO != nil && first {
		done := make(chan struct{})
		go func() { taskIO.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait):
		}
	}
	for _, w := range streams {
		w.flush()
	}
}

func (l *criLogFile) writeEntry(stream, tag string, line []byte) error {
	var b bytes.Buffer
	b.Grow(len(line) + 48)
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(line)
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.f.Write(b.Bytes())
	return err
}

// Close logs the streams' unfinished lines and closes the file.
func (l *criLogFile) Close() error {
	l.mu.Lock()
	streams := slices.Clone(l.streams)
	l.mu.Unlock()
	for _, w := range streams {
		w.flush()
	}
	return l.f.Close()
}

// stream returns a writer for one of the container's streams.
func (l *criLogFile) stream(name string) io.Writer {
	w := &criStreamWriter{file: l, stream: name}
	l.mu.Lock()
	l.streams = append(l.streams, w)
	l.mu.Unlock()
	return w
}

// criStreamWriter turns one stream's output into log entries.
type criStreamWriter struct {
	file    *criLogFile
	stream  string
	mu      sync.Mutex // guards partial
	partial []byte
}

// flush logs the unfinished line, if any, as a partial ("P") entry, as
// containerd's CRI logs output that ends without a newline: readers show
// it without one.
func (w *criStreamWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.file.writeEntry(w.stream, "P", w.partial)
		w.partial = w.partial[:0]
	}
}

func (w *criStreamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			for len(w.partial) >= maxLogLine {
				if err := w.file.writeEntry(w.stream, "P", w.partial[:maxLogLine]); err != nil {
					return 0, err
				}
				w.partial = append(w.partial[:0], w.partial[maxLogLine:]...)
			}
			break
		}
		line := p[:i]
		if len(w.partial) > 0 {
			line = append(w.partial, line...)
			w.partial = w.partial[:0]
		}
		if err := w.file.writeEntry(w.stream, "F", line); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	return n, nil
}

// LogOptions select what ReadContainerLog writes, as kubectl logs asks.
type LogOptions struct {
	// Follow keeps writing new lines while running says the container runs.
	Follow bool
	// TailLines, when >= 0, writes only that many last lines.
	TailLines int64
	// Since, when set, skips lines logged before it.
	Since time.Time
	// Timestamps prefixes each line with its RFC 3339 timestamp.
	Timestamps bool
	// LimitBytes, when > 0, stops after that many bytes.
	LimitBytes int64
	// Stream, when set, writes only that stream's lines ("stdout" or
	// "stderr").
	Stream string
}

// logEntry is one parsed line of a CRI log file.
type logEntry struct {
	ts      time.Time
	rawTS   []byte
	stream  string
	partial bool
	content []byte
}

func parseLogLine(line []byte) (logEntry, bool) {
	parts := bytes.SplitN(line, []byte(" "), 4)
	if len(parts) < 4 {
		return logEntry{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return logEntry{}, false
	}
	return logEntry{ts: ts, rawTS: parts[0], stream: string(parts[1]), partial: string(parts[2]) == "P", content: parts[3]}, true
}

// ReadContainerLog writes the container log at path to w as kubectl logs
// shows it. With Follow it keeps polling for new lines until ctx ends, or
// running reports false and the lines written before are out.
func ReadContainerLog(ctx context.Context, path string, opts LogOptions, w io.Writer, running func() bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open log %q: %w", path, err)
	}
	defer f.Close()
	if opts.TailLines >= 0 {
		if err := seekTail(f, opts.TailLines); err != nil {
			return err
		}
	}
	var out io.Writer = w
	if opts.LimitBytes > 0 {
		out = &limitWriter{w: w, left: opts.LimitBytes}
	}
	r := bufio.NewReaderSize(f, 64*1024)
	var pending []byte
	last := false
	for {
		chunk, err := r.ReadBytes('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			line := append(pending, chunk[:len(chunk)-1]...)
			pending = pending[:0]
			if e, ok := parseLogLine(line); ok && (opts.Since.IsZero() || !e.ts.Before(opts.Since)) && (opts.Stream == "" || e.stream == opts.Stream) {
				if err := writeEntry(out, e, opts.Timestamps); errors.Is(err, errLimitReached) {
					return nil
				} else if err != nil {
					return err
				}
			}
			continue
		}
		pending = append(pending, chunk...)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("failed to read log %q: %w", path, err)
		}
		if !opts.Follow || last {
			return nil
		}
		if running != nil && !running() {
			last = true
			r.Reset(f)
			continue
		}
		if fl, ok := w.(interface{ Flush() }); ok {
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
		r.Reset(f)
	}
}

func writeEntry(w io.Writer, e logEntry, timestamps bool) error {
	var b bytes.Buffer
	if timestamps {
		b.Write(e.rawTS)
		b.WriteByte(' ')
	}
	b.Write(e.content)
	if !e.partial {
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// errLimitReached ends a read at LimitBytes.
var errLimitReached = errors.New("log limit reached")

type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimitReached
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("failed to stat log %q: %w", f.Name(), err)
	}
	if n == 0 {
		_, err := f.Seek(fi.Size(), io.SeekStart)
		return err
	}
	const block = 32 * 1024
	pos := fi.Size()
	var lines int64
	buf := make([]byte, block)
	for pos > 0 {
		size := int64(block)
		if pos < size {
			size = pos
		}
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("failed to read log %q: %w", f.Name(), err)
		}
		for i := size - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == fi.Size()-1 {
				continue
			}
			lines++
			if lines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}
