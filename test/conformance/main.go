// Command conformance is Glassplane's runner of the upstream Kubernetes
// conformance suite (issue 24): it builds the images the specs run and
// turns the suite's JUnit into docs/conformance.md.
//
//	go run . images -out DIR             build the images as OCI archives
//	go run . report -junit FILE -out MD  write the results page
//	go run . smoke -junit FILE           list the fastest passing specs
//
// run.sh drives a whole run; see docs/conformance.md.
package main

import (
	"flag"
	"fmt"
	"os"
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
		_ = fl.Parse(args)
		var paths []string
		if paths, err = buildImages(*out, *busybox); err == nil {
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
