// Command conformance is Glassplane's runner of the upstream Kubernetes
// conformance suite (issue 24): it builds the images the specs run and
// turns the suite's JUnit into docs/conformance.md.
//
//	go run . images -out DIR [-specs FILE] build the images as OCI archives
//	                                     (with -specs, only those its specs need)
//	go run . report -junit FILE -out MD  write the results page
//	go run . smoke -junit FILE           list the fastest passing specs
//
// run.sh drives a whole run; see docs/conformance.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance images|report|smoke [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "images":
		fl := flag.NewFlagSet(cmd, flag.ExitOnError)
		out := fl.String("out", "images", "directory for the OCI archives")
		busybox := fl.String("busybox", "/bin/busybox", "the host's static busybox (Debian's busybox-static)")
		specsFile := fl.String("specs", "", "a file of the full names of the specs to run, one per line (# comments): images only other specs run are not built")
		_ = fl.Parse(args)
		var specs []string
		if *specsFile != "" {
			if specs, err = readSpecList(*specsFile); err != nil {
				break
			}
		}
		var paths []string
		if paths, err = buildImages(*out, *busybox, specs); err == nil {
			for _, p := range paths {
				fmt.Println(p)
			}
		}
	case "report":
		err = reportCmd(args)
	case "smoke":
		err = smokeCmd(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

// readSpecList reads a file of spec names, one per line, without its
// comments and blank lines.
func readSpecList(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	specs := []string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			specs = append(specs, line)
		}
	}
	return specs, nil
}
