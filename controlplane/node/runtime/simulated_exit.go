package runtime

import (
	"regexp"
	"strconv"
	"strings"
)

// exitStatement matches a shell's final "exit N".
var exitStatement = regexp.MustCompile(`^exit\s+([0-9]{1,3})$`)

// simulatedExitCode is the status a simulated container exits with, read
// from its command line as a shell would run it: a command whose last
// statement is "exit N" (sh -c 'exit 1', or "echo hi; exit 3") exits with
// N once CompleteAfter has passed, whatever the pod's restartPolicy, so
// tests and demos can make pods fail (a Job's backoffLimit) or crash-loop
// on simulated nodes. ok is false for any other command.
func simulatedExitCode(c ContainerSpec) (code int, ok bool) {
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(argv) == 0 {
		return 0, false
	}
	script := argv[len(argv)-1]
	if i := strings.LastIndexAny(script, ";&|\n"); i >= 0 {
		script = script[i+1:]
	}
	m := exitStatement.FindStringSubmatch(strings.TrimSpace(script))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > 255 {
		return 0, false
	}
	return n, true
}
