package main

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// TestGlibcDNSTestingImage builds the glibc querier's image and checks it
// holds what the DNS specs run in it: getent with glibc, dig, and an
// nsswitch.conf that resolves hosts by DNS.
func TestGlibcDNSTestingImage(t *testing.T) {
	b := &builder{work: t.TempDir(), busybox: "/bin/busybox", built: map[string][]byte{}}
	var img image
	for _, i := range images {
		if i.id == imageutils.GlibcDnsTesting {
			img = i
		}
	}
	if img.build == nil {
		t.Fatal("glibc-dns-testing is not built")
	}
	archive, err := b.archive(img)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	var nsswitch string
	outer := tar.NewReader(bytes.NewReader(archive))
	for {
		_, err := outer.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(outer)
		// The layer is a blob: a tar of the rootfs.
		inner := tar.NewReader(bytes.NewReader(data))
		for {
			fh, err := inner.Next()
			if err != nil {
				break
			}
			files[strings.TrimPrefix(fh.Name, "./")] = true
			if strings.HasSuffix(fh.Name, "etc/nsswitch.conf") {
				b, _ := io.ReadAll(inner)
				nsswitch = string(b)
			}
		}
	}
	for _, want := range []string{"usr/bin/getent", "usr/bin/dig", "lib/x86_64-linux-gnu/libc.so.6", "bin/sh"} {
		if !files[want] {
			t.Errorf("the image lacks %s", want)
		}
	}
	if !strings.Contains(nsswitch, "hosts: files dns") {
		t.Errorf("nsswitch.conf %q", nsswitch)
	}
}
