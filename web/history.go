package web

import (
	"strings"
)

const (
	// historyLength bounds how many revisions of one key the explorer walks.
	historyLength = 50
	// diffMaxLines bounds each side of a diff; longer values are compared
	// by their first lines only.
	diffMaxLines = 2000
)

// diffOp marks a line of a diff.
type diffOp byte

const (
	diffSame   diffOp = ' '
	diffAdd    diffOp = '+'
	diffRemove diffOp = '-'
)

// diffLine is one line of a diff.
type diffLine struct {
	Op   diffOp
	Text string
}

// lineDiff compares two texts line by line (longest common subsequence) and
// returns every line of both, marked kept, removed from a or added in b.
func lineDiff(a, b string) []diffLine {
	x, y := splitLines(a), splitLines(b)
	// Skip the common head and tail; values differ in a few lines.
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	var out []diffLine
	for _, l := range x[:head] {
		out = append(out, diffLine{diffSame, l})
	}
	mx, my := x[head:len(x)-tail], y[head:len(y)-tail]
	n, m := len(mx), len(my)
	// lcs[i][j] is the LCS length of mx[i:] and my[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if mx[i] == my[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && mx[i] == my[j]:
			out = append(out, diffLine{diffSame, mx[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffLine{diffRemove, mx[i]})
			i++
		default:
			out = append(out, diffLine{diffAdd, my[j]})
			j++
		}
	}
	for _, l := range x[len(x)-tail:] {
		out = append(out, diffLine{diffSame, l})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > diffMaxLines {
		lines = lines[:diffMaxLines]
	}
	return lines
}
