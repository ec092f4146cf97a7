package main

import (
	"bufio"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// junitSuites is the part of Ginkgo's JUnit report the page needs.
type junitSuites struct {
	Suites []struct {
		Time  float64     `xml:"time,attr"`
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// spec is one [Conformance] spec's result.
type spec struct {
	name    string
	sig     string
	status  string // passed, failed, n/a or not run
	seconds float64
	// reason is the failure's first line, or why the spec does not apply.
	reason string
}

var sigName = regexp.MustCompile(`\[(sig-[a-z-]+)\]`)

// labelsSuffix is the " [sig-apps, Slow, Conformance]" Ginkgo's JUnit
// reporter appends to a spec's text: not part of what --focus matches.
var labelsSuffix = regexp.MustCompile(` \[[^\[\]]*, [^\[\]]*\]$`)

// readJUnit returns the [Conformance] specs of a Ginkgo JUnit report and
// the suite's duration.
func readJUnit(r io.Reader) ([]spec, time.Duration, error) {
	var suites junitSuites
	if err := xml.NewDecoder(r).Decode(&suites); err != nil {
		return nil, 0, fmt.Errorf("failed to decode JUnit: %w", err)
	}
	var specs []spec
	var total float64
	for _, s := range suites.Suites {
		total += s.Time
		for _, c := range s.Cases {
			name := labelsSuffix.ReplaceAllString(strings.TrimPrefix(c.Name, "[It] "), "")
			if !strings.Contains(name, "[Conformance]") {
				continue
			}
			sp := spec{name: name, sig: "other", seconds: c.Time}
			if m := sigName.FindStringSubmatch(name); m != nil {
				sp.sig = m[1]
			}
			switch {
			case c.Failure != nil:
				sp.status, sp.reason = "failed", firstLine(c.Failure.Message, c.Failure.Body)
			case c.Error != nil:
				sp.status, sp.reason = "failed", firstLine(c.Error.Message, c.Error.Body)
			case c.Status == "passed":
				sp.status = "passed"
			case c.Skipped != nil && strings.HasPrefix(c.Skipped.Message, "skipped - "):
				// The spec skipped itself (e2eskipper): its own check of
				// the set-up, which it makes on upstream Kubernetes too.
				sp.status, sp.reason = "n/a", "the spec skips itself: "+firstLine(strings.TrimPrefix(c.Skipped.Message, "skipped - "))
			default:
				sp.status = "not run"
			}
			specs = append(specs, sp)
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	return specs, time.Duration(total * float64(time.Second)), nil
}

// firstLine is the first non-empty line of a failure, trimmed to fit a
// table cell.
func firstLine(texts ...string) string {
	for _, t := range texts {
		for _, l := range strings.Split(t, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "[FAILED]") && len(l) == len("[FAILED]") {
				continue
			}
			l = strings.TrimSpace(strings.TrimPrefix(l, "[FAILED]"))
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return "(no message)"
}

// readNotApplicable reads not-applicable.txt: "<reason> | <spec name>" a
// line, # comments.
func readNotApplicable(p string) (map[string]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	na := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		reason, name, ok := strings.Cut(l, " | ")
		if !ok {
			return nil, fmt.Errorf("%s: want \"<reason> | <spec name>\": %q", p, l)
		}
		na[strings.TrimSpace(name)] = strings.TrimSpace(reason)
	}
	return na, sc.Err()
}

type sigCount struct{ passed, applicable, total int }

func reportCmd(args []string) error {
	fl := flag.NewFlagSet("report", flag.ExitOnError)
	junit := fl.String("junit", "", "Ginkgo JUnit report of the run")
	naFile := fl.String("not-applicable", "not-applicable.txt", "specs that do not apply, with reasons")
	header := fl.String("header", "conformance-header.md", "the page's text above the results")
	out := fl.String("out", "../../docs/conformance.md", "page to write")
	started := fl.String("started", "", "when the run started (RFC 3339)")
	logFile := fl.String("log", "", "Ginkgo's verbose output, read when the JUnit lists no spec")
	took := fl.Duration("took", 0, "the run's duration, when read from -log")
	_ = fl.Parse(args)
	f, err := os.Open(*junit)
	if err != nil {
		return err
	}
	defer f.Close()
	specs, dur, err := readJUnit(f)
	if err != nil {
		return err
	}
	if len(specs) == 0 && *logFile != "" {
		lf, err := os.Open(*logFile)
		if err != nil {
			return err
		}
		defer lf.Close()
		if specs, err = readLog(lf); err != nil {
			return err
		}
		dur = *took
	}
	na, err := readNotApplicable(*naFile)
	if err != nil {
		return err
	}
	head, err := os.ReadFile(*header)
	if err != nil {
		return err
	}
	page := renderPage(string(head), specs, na, dur, *started)
	return os.WriteFile(*out, []byte(page), 0o644)
}

// renderPage writes the results page: the figure per sig, then every spec.
func renderPage(head string, specs []spec, na map[string]string, dur time.Duration, started string) string {
	counts := map[string]*sigCount{}
	var sigs []string
	all := &sigCount{}
	for i := range specs {
		sp := &specs[i]
		if reason, ok := na[sp.name]; ok && sp.status != "passed" {
			sp.status, sp.reason = "n/a", reason
		}
		c := counts[sp.sig]
		if c == nil {
			c = &sigCount{}
			counts[sp.sig] = c
			sigs = append(sigs, sp.sig)
		}
		for _, c := range []*sigCount{c, all} {
			c.total++
			if sp.status != "n/a" {
				c.applicable++
			}
			if sp.status == "passed" {
				c.passed++
			}
		}
	}
	sort.Strings(sigs)
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, "\n## The figure\n\n")
	fmt.Fprintf(&b, "**%d / %d / %d** (passed / applicable / total) [Conformance] specs of Kubernetes v1.37.2's e2e.test", all.passed, all.applicable, all.total)
	if started != "" {
		fmt.Fprintf(&b, ", run %s", started)
	}
	fmt.Fprintf(&b, "; the run took %s.\n\n", dur.Round(time.Minute))
	b.WriteString("| sig | passed | applicable | total |\n| --- | ---: | ---: | ---: |\n")
	for _, s := range sigs {
		c := counts[s]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", s, c.passed, c.applicable, c.total)
	}
	fmt.Fprintf(&b, "| **all** | **%d** | **%d** | **%d** |\n", all.passed, all.applicable, all.total)
	b.WriteString("\n## The images\n\nNone of these can be pulled here; test/conformance builds each (`go run . images`) and run.sh imports it into the node's containerd under the name the specs use.\n\n| image | built from |\n| --- | --- |\n")
	for _, img := range images {
		fmt.Fprintf(&b, "| %s | %s |\n", img.name, cell(img.from))
	}
	for _, s := range sigs {
		c := counts[s]
		fmt.Fprintf(&b, "\n## %s (%d / %d / %d)\n\n| spec | result | seconds |\n| --- | --- | ---: |\n", s, c.passed, c.applicable, c.total)
		for _, sp := range specs {
			if sp.sig != s {
				continue
			}
			result := sp.status
			if sp.reason != "" {
				result += ": " + sp.reason
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f |\n", cell(sp.name), cell(result), sp.seconds)
		}
	}
	return b.String()
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// smokeCmd prints the smoke subset: the fastest passing specs, at least
// two of each sig that has them, n in all, one name a line.
func smokeCmd(args []string) error {
	fl := flag.NewFlagSet("smoke", flag.ExitOnError)
	junit := fl.String("junit", "", "Ginkgo JUnit report of a full run")
	n := fl.Int("n", 40, "how many specs")
	logFile := fl.String("log", "", "Ginkgo's verbose output, read when the JUnit lists no spec")
	_ = fl.Parse(args)
	f, err := os.Open(*junit)
	if err != nil {
		return err
	}
	defer f.Close()
	specs, _, err := readJUnit(f)
	if err != nil {
		return err
	}
	if len(specs) == 0 && *logFile != "" {
		lf, err := os.Open(*logFile)
		if err != nil {
			return err
		}
		defer lf.Close()
		if specs, err = readLog(lf); err != nil {
			return err
		}
	}
	for _, name := range pickSmoke(specs, *n) {
		fmt.Println(name)
	}
	return nil
}

func pickSmoke(specs []spec, n int) []string {
	var passed []spec
	for _, sp := range specs {
		if sp.status == "passed" {
			passed = append(passed, sp)
		}
	}
	sort.SliceStable(passed, func(i, j int) bool { return passed[i].seconds < passed[j].seconds })
	chosen := map[string]bool{}
	perSig := map[string]int{}
	for _, sp := range passed {
		if perSig[sp.sig] < 2 && len(chosen) < n {
			chosen[sp.name] = true
			perSig[sp.sig]++
		}
	}
	for _, sp := range passed {
		if len(chosen) < n {
			chosen[sp.name] = true
		}
	}
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

var (
	ansi       = regexp.MustCompile("\x1b\\[[0-9;]*m")
	resultHead = regexp.MustCompile(`^(?:•|S) (?:\[([A-Z]+)\] )?\[([0-9.]+) seconds\]`)
)

// readLog reads the [Conformance] specs' results from Ginkgo's verbose
// output (ginkgo -v), for runs whose JUnit came out empty: each result is a
// "• [FAILED] [12.3 seconds]" line, then the spec's text with "[It]" before
// its leaf, then, for a failure, its "[FAILED] <message>" line.
func readLog(r io.Reader) ([]spec, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var specs []spec
	var cur *spec
	expectName := false
	for sc.Scan() {
		l := ansi.ReplaceAllString(sc.Text(), "")
		if m := resultHead.FindStringSubmatch(l); m != nil {
			cur = &spec{status: "passed"}
			cur.seconds, _ = strconv.ParseFloat(m[2], 64)
			switch m[1] {
			case "":
			case "SKIPPED":
				cur.status = "not run"
			default:
				cur.status = "failed"
			}
			expectName = true
			continue
		}
		if expectName {
			expectName = false
			name := labelsSuffix.ReplaceAllString(strings.Replace(strings.TrimSpace(l), "[It] ", "", 1), "")
			if !strings.Contains(name, "[Conformance]") {
				cur = nil
				continue
			}
			cur.name, cur.sig = name, "other"
			if m := sigName.FindStringSubmatch(name); m != nil {
				cur.sig = m[1]
			}
			specs = append(specs, *cur)
			continue
		}
		t := strings.TrimSpace(l)
		if cur != nil && cur.name != "" && cur.status == "failed" && strings.HasPrefix(t, "[FAILED] ") && !strings.HasPrefix(t, "[FAILED] in [") {
			last := &specs[len(specs)-1]
			if last.reason == "" {
				last.reason = firstLine(regexp.MustCompile(` @ [0-9/]+ [0-9:.]+$`).ReplaceAllString(t, ""))
			}
		}
		if t == "------------------------------" {
			cur = nil
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	return specs, sc.Err()
}
