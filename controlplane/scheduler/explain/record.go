package explain

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"sync"
)

// The full decision record of a pod is one ConfigMap in RecordNamespace,
// Glassplane's own namespace (never the pod's: the records belong to
// Glassplane, not to the user), named RecordName(pod's namespace, pod),
// labelled RecordLabel=RecordLabelValue and with the pod's namespace, name
// and uid (RecordLabels), and holding the gzip-compressed JSON History
// under binaryData[RecordKey]. An ownerReference cannot cross namespaces,
// so the scheduler deletes a record itself when its pod is deleted.
const (
	// RecordNamespace holds every decision record. The API server creates
	// it at bootstrap and never lets it be deleted, like kube-system.
	RecordNamespace = "glassplane-system"
	// RecordLabel marks a ConfigMap as a scheduler decision record.
	RecordLabel = "scheduler.glassplane.io/decisions"
	// RecordLabelValue is RecordLabel's value on a record.
	RecordLabelValue = "true"
	// PodNamespaceLabel, PodNameLabel and PodUIDLabel name the record's
	// pod. PodNameLabel is left out for a name longer than a label value
	// may be (63 characters); PodAnnotation always has it.
	PodNamespaceLabel = "scheduler.glassplane.io/pod-namespace"
	PodNameLabel      = "scheduler.glassplane.io/pod-name"
	PodUIDLabel       = "scheduler.glassplane.io/pod-uid"
	// PodAnnotation is the record's pod as "namespace/name".
	PodAnnotation = "scheduler.glassplane.io/pod"
	// RecordKey is the binaryData key holding the compressed History.
	RecordKey = "decisions.json.gz"
	// SummaryAnnotation is the Scheduled or FailedScheduling Event's
	// annotation holding the JSON Summary of the attempt.
	SummaryAnnotation = "scheduler.glassplane.io/summary"
)

// Limits of a record.
const (
	// DefaultHistory is how many attempts a record keeps, newest last.
	DefaultHistory = 10
	// MaxRecordBytes bounds the compressed History, well below the API's
	// 1 MiB object limit (1,572,864 bytes in etcd's default request size,
	// 1 MiB for a ConfigMap's data): older attempts are dropped first.
	MaxRecordBytes = 900 * 1024
	// maxDecodedBytes bounds what DecodeHistory inflates, so that a hostile
	// record cannot exhaust memory.
	maxDecodedBytes = 64 << 20
	// maxNameLength is a DNS subdomain's maximum length.
	maxNameLength = 253
	// maxLabelValueLength is a label value's maximum length.
	maxLabelValueLength = 63
)

// History is the attempts the scheduler recorded for one pod, oldest first.
type History struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// UID is the pod's uid: a record left from an earlier pod of the same
	// name does not count.
	UID string `json:"uid"`
	// Attempts are the recorded attempts, oldest first.
	Attempts []Decision `json:"attempts"`
	// Dropped counts older attempts left out to stay within the limits.
	Dropped int `json:"dropped,omitempty"`
}

// RecordName is the name of the ConfigMap in RecordNamespace holding the
// decision record of pod namespace/name: "<namespace>.<name>" (a namespace
// has no dots, so no two pods share it), or for names too long for that,
// the name cut short with a hash of the whole.
func RecordName(namespace, name string) string {
	full := namespace + "." + name
	if len(full) <= maxNameLength {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	hash := fmt.Sprintf("-%08x", h.Sum32())
	return strings.TrimRight(full[:maxNameLength-len(hash)], ".-") + hash
}

// RecordLabels are the labels of the record of pod namespace/name with
// uid.
func RecordLabels(namespace, name, uid string) map[string]string {
	l := map[string]string{RecordLabel: RecordLabelValue, PodNamespaceLabel: namespace, PodUIDLabel: uid}
	if len(name) <= maxLabelValueLength {
		l[PodNameLabel] = name
	}
	return l
}

// EncodeHistory caps h at the newest maxAttempts attempts (DefaultHistory
// when <= 0), then drops the oldest until the gzip-compressed JSON is at
// most MaxRecordBytes; a single attempt still too big is cut down like
// Compact. It returns the compressed bytes and the history they hold.
func EncodeHistory(h History, maxAttempts int) ([]byte, History, error) {
	if maxAttempts <= 0 {
		maxAttempts = DefaultHistory
	}
	if n := len(h.Attempts) - maxAttempts; n > 0 {
		h.Attempts = append([]Decision(nil), h.Attempts[n:]...)
		h.Dropped += n
	}
	for {
		b, err := gzipJSON(&h)
		if err != nil {
			return nil, h, fmt.Errorf("failed to encode decision record of %q: %w", h.Pod, err)
		}
		if len(b) <= MaxRecordBytes {
			return b, h, nil
		}
		if len(h.Attempts) > 1 {
			h.Attempts = append([]Decision(nil), h.Attempts[1:]...)
			h.Dropped++
			continue
		}
		if len(h.Attempts) == 0 {
			return nil, h, fmt.Errorf("failed to encode decision record of %q: %d bytes without attempts", h.Pod, len(b))
		}
		// One attempt alone is too big: keep its compact form.
		c, err := Compact(h.Attempts[0])
		if err != nil {
			return nil, h, err
		}
		var d Decision
		if err := json.Unmarshal(c, &d); err != nil {
			return nil, h, fmt.Errorf("failed to encode decision record of %q: %w", h.Pod, err)
		}
		h.Attempts[0] = d
		b, err = gzipJSON(&h)
		if err != nil {
			return nil, h, fmt.Errorf("failed to encode decision record of %q: %w", h.Pod, err)
		}
		return b, h, nil
	}
}

// gzipWriters reuses compressors: a new one allocates about a megabyte.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// jsonBuffers reuses the uncompressed JSON of a record, some hundreds of
// kilobytes at 1,000 nodes.
var jsonBuffers = sync.Pool{New: func() any { return new([]byte) }}

// gzipJSON returns h's record JSON (see appendRecord), compressed.
func gzipJSON(h *History) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	raw := jsonBuffers.Get().(*[]byte)
	defer jsonBuffers.Put(raw)
	*raw = append(appendRecord((*raw)[:0], h), '\n')
	if _, err := zw.Write(*raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ErrRecordTooLarge is returned by DecodeHistory for a record that
// inflates beyond the decoder's bound.
var ErrRecordTooLarge = errors.New("decision record inflates beyond 64 MiB")

// DecodeHistory reads a record's compressed History.
func DecodeHistory(b []byte) (History, error) {
	var h History
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return h, fmt.Errorf("failed to read decision record: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxDecodedBytes+1))
	if err != nil {
		return h, fmt.Errorf("failed to read decision record: %w", err)
	}
	if len(data) > maxDecodedBytes {
		return h, ErrRecordTooLarge
	}
	if h, err = decodeRecord(data); err != nil {
		return h, fmt.Errorf("failed to decode decision record: %w", err)
	}
	return h, nil
}

// Summary is the short form of one attempt attached to its Event.
type Summary struct {
	Attempt int `json:"attempt"`
	// Nodes is how many nodes the scheduler knew, Evaluated how many it
	// filtered, Feasible how many passed.
	Nodes     int `json:"nodes"`
	Evaluated int `json:"evaluated"`
	Feasible  int `json:"feasible"`
	// Node is the chosen node and Score its total, when one was chosen.
	Node  string `json:"node,omitempty"`
	Score int64  `json:"score,omitempty"`
	// Rejected counts the nodes each filter plugin removed.
	Rejected map[string]int `json:"rejected,omitempty"`
	// NominatedNode is where preemption made room.
	NominatedNode string `json:"nominatedNode,omitempty"`
	// Record names the ConfigMap holding the full record.
	Record string `json:"record,omitempty"`
}

// Summarize returns d's Summary.
func Summarize(d Decision) Summary {
	s := Summary{Attempt: d.Attempt, Nodes: d.Nodes, Evaluated: len(d.Filter) + d.FilterOmitted, Feasible: d.Feasible,
		Node: d.Node, NominatedNode: d.NominatedNode, Record: d.Record}
	for _, f := range d.Filter {
		if !f.Passed {
			if s.Rejected == nil {
				s.Rejected = map[string]int{}
			}
			s.Rejected[f.Plugin]++
		}
	}
	for _, ns := range d.Scores {
		if ns.Node == d.Node {
			s.Score = ns.Total
		}
	}
	return s
}

// SummaryJSON is the JSON of Summarize(d).
func SummaryJSON(d Decision) string {
	b, err := json.Marshal(Summarize(d))
	if err != nil {
		return ""
	}
	return string(b)
}
