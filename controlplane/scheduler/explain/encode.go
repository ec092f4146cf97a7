package explain

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The scheduler encodes a Decision on every attempt (compressed until it
// is written, see recordform.go; measured for its record, see Cap), and a
// Decision at 1,000 nodes holds some 3,000 plugin scores: encoding/json's
// reflection spent a quarter of a scheduling cycle on it. These appenders
// write the same JSON as encoding/json with HTML escaping off (the tests
// compare the bytes), with the same field names and omitempty rules as the
// struct tags.

func appendDecision(b []byte, d *Decision) []byte {
	b = appendDecisionHead(b, d)
	b = appendFilter(b, d)
	if d.FilterOmitted != 0 {
		b = append(b, `,"filterOmitted":`...)
		b = strconv.AppendInt(b, int64(d.FilterOmitted), 10)
	}
	if len(d.Scores) > 0 {
		b = append(b, `,"scores":[`...)
		for i := range d.Scores {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNodeScore(b, &d.Scores[i])
		}
		b = append(b, ']')
	}
	return appendDecisionTail(b, d)
}

// appendDecisionHead writes d's opening brace and its fields up to
// filterPlugins.
func appendDecisionHead(b []byte, d *Decision) []byte {
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	b = append(b, `,"time":`...)
	b = appendTime(b, d.Time.Time)
	b = append(b, `,"pod":`...)
	b = appendString(b, d.Pod)
	b = appendOptString(b, `,"node":`, d.Node)
	b = append(b, `,"nodes":`...)
	b = strconv.AppendInt(b, int64(d.Nodes), 10)
	b = append(b, `,"feasible":`...)
	b = strconv.AppendInt(b, int64(d.Feasible), 10)
	if len(d.FilterPlugins) > 0 {
		b = append(b, `,"filterPlugins":`...)
		b = appendStrings(b, d.FilterPlugins)
	}
	return b
}

// appendFilter writes d's filter field, if any.
func appendFilter(b []byte, d *Decision) []byte {
	if len(d.Filter) > 0 {
		b = append(b, `,"filter":[`...)
		for i := range d.Filter {
			f := &d.Filter[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"node":`...)
			b = appendString(b, f.Node)
			b = append(b, `,"passed":`...)
			b = strconv.AppendBool(b, f.Passed)
			b = appendRejection(b, f)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return b
}

// appendRejection writes a filter entry's plugin and reason fields, when
// set.
func appendRejection(b []byte, f *NodeFilter) []byte {
	b = appendOptString(b, `,"plugin":`, f.Plugin)
	b = appendOptString(b, `,"reason":`, f.Reason)
	return b
}

// appendDecisionTail writes d's fields from scoresOmitted on and its
// closing brace.
func appendDecisionTail(b []byte, d *Decision) []byte {
	if d.ScoresOmitted != 0 {
		b = append(b, `,"scoresOmitted":`...)
		b = strconv.AppendInt(b, int64(d.ScoresOmitted), 10)
	}
	b = appendOptString(b, `,"nominatedNode":`, d.NominatedNode)
	if len(d.Victims) > 0 {
		b = append(b, `,"victims":`...)
		b = appendStrings(b, d.Victims)
	}
	if d.PDBViolations != 0 {
		b = append(b, `,"pdbViolations":`...)
		b = strconv.AppendInt(b, int64(d.PDBViolations), 10)
	}
	b = appendOptString(b, `,"message":`, d.Message)
	return append(b, '}')
}

func appendNodeScore(b []byte, s *NodeScore) []byte {
	b = append(b, `{"node":`...)
	b = appendString(b, s.Node)
	b = append(b, `,"plugins":`...)
	if s.Plugins == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range s.Plugins {
			p := &s.Plugins[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"plugin":`...)
			b = appendString(b, p.Plugin)
			if p.Raw != 0 {
				b = append(b, `,"raw":`...)
				b = strconv.AppendInt(b, p.Raw, 10)
			}
			if p.Normalized != 0 {
				b = append(b, `,"normalized":`...)
				b = strconv.AppendInt(b, p.Normalized, 10)
			}
			b = append(b, `,"weight":`...)
			b = strconv.AppendInt(b, p.Weight, 10)
			if p.Weighted != 0 {
				b = append(b, `,"weighted":`...)
				b = strconv.AppendInt(b, p.Weighted, 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, s.Total, 10)
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendTime writes t as metav1.Time's JSON: null when zero, else RFC 3339
// in UTC to the second.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does
// without HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped.
// appendOptString writes the field whose name and colon are key, with
// the value s, when s is not empty (omitempty).
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
