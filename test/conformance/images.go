package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// image is one image the conformance specs run, built here from local
// sources under the exact name test/utils/image/manifest.go gives it.
type image struct {
	// id is the image's entry in k8s.io/kubernetes/test/utils/image.
	id imageutils.ImageID
	// name is the reference the specs pull; images_test.go checks it
	// against the module's manifest.
	name string
	// from says what the stand-in is built from (docs/conformance.md).
	from string
	// build adds the image's files to the root filesystem.
	build func(b *builder, fs *rootfs) error
	// entrypoint, cmd and user are the image config's.
	entrypoint, cmd []string
	user            string
	// only, when set, is the start of the names of the only specs that run
	// the image: a run of a list of specs without one (the smoke subset)
	// skips building it.
	only string
}

// images are the images the runner builds. The others in the manifest
// (volume servers, node-perf, resource-consumer, ...) are not built: the
// specs that need them fail with an image pull error, as they would on any
// cluster without them.
var images = []image{
	{
		id: imageutils.Agnhost, name: "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
		from:       "agnhost built static from k8s.io/kubernetes v1.37.2 test/images/agnhost (its VERSION is 2.66.1), porter's test certificate, the host's busybox-static applets, Debian's curl, dig, getent and OpenBSD nc (as nc, before busybox's on PATH: the service specs run nc -v -t -w 2, which busybox's nc lacks) with their shared libraries",
		build:      (*builder).agnhost,
		entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
	},
	{
		id: imageutils.AgnhostPrev, name: "registry.k8s.io/e2e-test-images/agnhost:2.55",
		from:       "the same files as agnhost:2.66.1 (the specs use 2.55 only as a second, different image)",
		build:      (*builder).agnhost,
		entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
	},
	{
		id: imageutils.BusyBox, name: "registry.k8s.io/e2e-test-images/busybox:1.37.0-2",
		from:  "the host's busybox-static (Debian's busybox 1.35) with every applet linked into /bin, and Debian's bash-static as /bin/sh (as every image here has: Debian's busybox sh prefers its applets to PATH and drops environment variables whose names are not shell names, which the upstream images' shells do not)",
		build: func(b *builder, fs *rootfs) error { return nil },
		cmd:   []string{"sh"},
	},
	{
		id: imageutils.Nginx, name: "registry.k8s.io/e2e-test-images/nginx:1.27.0-2",
		from:  "Debian's nginx-light (nginx 1.22) with its shared libraries, serving its default page on port 80, logging to stdout/stderr; busybox-static applets",
		build: (*builder).nginx,
		cmd:   []string{"nginx", "-g", "daemon off;"},
	},
	{
		id: imageutils.NginxNew, name: "registry.k8s.io/e2e-test-images/nginx:1.28.0-2",
		from:  "the same files as nginx:1.27.0-2",
		build: (*builder).nginx,
		cmd:   []string{"nginx", "-g", "daemon off;"},
	},
	{
		id: imageutils.Pause, name: "registry.k8s.io/pause:3.10.2",
		from:       "test/conformance/pause, a static Go program that waits for SIGINT or SIGTERM (as the C pause does)",
		build:      (*builder).pause,
		entrypoint: []string{"/pause"},
	},
	{
		id: imageutils.Kitten, name: "registry.k8s.io/e2e-test-images/kitten:1.8",
		from:       "the agnhost image plus test/images/kitten/html, running agnhost test-webserver",
		build:      func(b *builder, fs *rootfs) error { return b.agnhostWithHTML(fs, "kitten") },
		entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
	},
	{
		id: imageutils.Nautilus, name: "registry.k8s.io/e2e-test-images/nautilus:1.8",
		from:       "the agnhost image plus test/images/nautilus/html, running agnhost test-webserver",
		build:      func(b *builder, fs *rootfs) error { return b.agnhostWithHTML(fs, "nautilus") },
		entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
	},
	{
		id: imageutils.GlibcDnsTesting, name: "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1",
		from:  "Debian's (bookworm, as upstream's base) dig, nslookup and host (bind9-dnsutils) and glibc's getent with their shared libraries and an nsswitch.conf of files then dns, busybox-static applets: the DNS specs' glibc querier resolves with getent and dig",
		build: (*builder).glibcDNSTesting,
		cmd:   []string{"sh"},
	},
	{
		id: imageutils.Nonewprivs, name: "registry.k8s.io/e2e-test-images/nonewprivs:1.4",
		from:  "nnp built static from k8s.io/kubernetes v1.37.2 test/images/nonewprivs, setuid root at /usr/local/bin/nnp as upstream's Dockerfile makes it, on the busybox image",
		build: (*builder).nonewprivs,
		cmd:   []string{"nnp"},
	},
	{
		id: imageutils.NonRoot, name: "registry.k8s.io/e2e-test-images/nonroot:1.5",
		from:  "the busybox image with USER 1234",
		build: func(b *builder, fs *rootfs) error { return nil },
		cmd:   []string{"sh"}, user: "1234",
	},
	{
		id: imageutils.APIServer, name: "registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2",
		from:       "sample-apiserver built static from k8s.io/sample-apiserver v0.37.2 (upstream's sample-apiserver:1.29.2 is an older build of the same program; the Aggregator spec uses only its wardle.example.com v1alpha1 API, which both serve), at /sample-apiserver as upstream's Dockerfile puts it, on the busybox image",
		build:      (*builder).sampleAPIServer,
		entrypoint: []string{"/sample-apiserver"},
		only:       "[sig-api-machinery] Aggregator ",
	},
	{
		id: imageutils.Etcd, name: "registry.k8s.io/etcd:3.7.0-0",
		from:  "etcd v3.7.0 built static from go.etcd.io/etcd/server/v3 (etcd's main program) at /usr/local/bin/etcd, on the busybox image; with no --data-dir it keeps its data in default.etcd under the working directory /, as in upstream's image; no etcdctl or migrate tooling (the aggregator spec runs only etcd)",
		build: (*builder).etcd,
		only:  "[sig-api-machinery] Aggregator ",
	},
}

// builder builds the images' files: the agnhost and pause binaries (once)
// from the module's sources, and host files.
type builder struct {
	// work is where the Go binaries are built.
	work string
	// k8sDir is the k8s.io/kubernetes module's directory.
	k8sDir string
	// busybox is the host's static busybox.
	busybox string
	// built caches binaries by package.
	built map[string][]byte
}

// goBinary builds pkg static and returns the binary.
func (b *builder) goBinary(pkg string) ([]byte, error) {
	if bin, ok := b.built[pkg]; ok {
		return bin, nil
	}
	out := filepath.Join(b.work, path.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("failed to build %q: %w", pkg, err)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	b.built[pkg] = bin
	return bin, nil
}

// nonewprivs is upstream's nonewprivs image: nnp prints its effective
// uid, and is setuid root.
func (b *builder) nonewprivs(fs *rootfs) error {
	bin, err := b.goBinary("k8s.io/kubernetes/test/images/nonewprivs")
	if err != nil {
		return err
	}
	fs.file("usr/local/bin/nnp", 0o4755, bin)
	return nil
}

// sampleAPIServer is upstream's sample-apiserver image: the wardle
// aggregated API server that the aggregator spec registers.
func (b *builder) sampleAPIServer(fs *rootfs) error {
	bin, err := b.goBinary("k8s.io/sample-apiserver")
	if err != nil {
		return err
	}
	fs.file("sample-apiserver", 0o755, bin)
	return nil
}

// etcd is upstream's etcd image as the aggregator spec uses it: etcd at
// /usr/local/bin/etcd, which the spec runs as the container's command. The
// image sets no entrypoint or command, as upstream's Dockerfile sets none.
func (b *builder) etcd(fs *rootfs) error {
	bin, err := b.goBinary("go.etcd.io/etcd/server/v3")
	if err != nil {
		return err
	}
	fs.file("usr/local/bin/etcd", 0o755, bin)
	return nil
}

func (b *builder) agnhost(fs *rootfs) error {
	bin, err := b.goBinary("k8s.io/kubernetes/test/images/agnhost")
	if err != nil {
		return err
	}
	fs.file("agnhost", 0o755, bin)
	fs.symlink("agnhost-2", "agnhost")
	fs.dir("uploads", 0o755)
	for _, f := range []string{"localhost.crt", "localhost.key"} {
		data, err := os.ReadFile(filepath.Join(b.k8sDir, "test/images/agnhost/porter", f))
		if err != nil {
			return err
		}
		fs.file(f, 0o644, data)
	}
	fs.passwd = append(fs.passwd, "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh")
	fs.group = append(fs.group, "user-defined-in-image:x:1000:", "group-defined-in-image:x:50000:user-defined-in-image")
	// getent: the DNS specs' musl querier checks the pod's /etc/hosts
	// with it (Alpine's; here glibc's, reading files only).
	for _, p := range []string{"/usr/bin/curl", "/usr/bin/dig", "/usr/bin/nc.openbsd", "/usr/bin/getent"} {
		if err := fs.hostBinary(p); err != nil {
			return err
		}
	}
	// The upstream image's nc is Alpine's netcat-openbsd.
	fs.symlink("usr/bin/nc", "nc.openbsd")
	return nil
}

// glibcDNSTesting is the glibc querier of the DNS specs: glibc's own
// resolver (getent, through NSS) beside dig.
func (b *builder) glibcDNSTesting(fs *rootfs) error {
	for _, p := range []string{"/usr/bin/dig", "/usr/bin/nslookup", "/usr/bin/host", "/usr/bin/getent"} {
		if err := fs.hostBinary(p); err != nil {
			return err
		}
	}
	fs.file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\n"))
	return nil
}

func (b *builder) agnhostWithHTML(fs *rootfs, name string) error {
	if err := b.agnhost(fs); err != nil {
		return err
	}
	for _, f := range []string{"data.json", name + ".jpg"} {
		data, err := os.ReadFile(filepath.Join(b.k8sDir, "test/images", name, "html", f))
		if err != nil {
			return err
		}
		fs.file(f, 0o644, data)
	}
	return nil
}

// nginxConf is the stand-in nginx image's configuration: the upstream
// image's default server (port 80, /usr/share/nginx/html) with its logs on
// the container's stdout and stderr.
const nginxConf = `user nginx;
worker_processes 1;
error_log /dev/stderr notice;
pid /run/nginx.pid;
events { worker_connections 1024; }
http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log /dev/stdout;
	server {
		listen 80;
		listen [::]:80;
		server_name localhost;
		location / {
			root /usr/share/nginx/html;
			index index.html index.htm;
		}
	}
}
`

func (b *builder) nginx(fs *rootfs) error {
	if err := fs.hostBinary("/usr/sbin/nginx"); err != nil {
		return err
	}
	mime, err := os.ReadFile("/etc/nginx/mime.types")
	if err != nil {
		return err
	}
	fs.file("etc/nginx/mime.types", 0o644, mime)
	fs.file("etc/nginx/nginx.conf", 0o644, []byte(nginxConf))
	fs.file("usr/share/nginx/html/index.html", 0o644, []byte("<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n</body>\n</html>\n"))
	for _, d := range []string{"var/log/nginx", "var/lib/nginx", "var/cache/nginx", "run"} {
		fs.dir(d, 0o755)
	}
	fs.passwd = append(fs.passwd, "nginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin")
	fs.group = append(fs.group, "nginx:x:101:nginx")
	return nil
}

func (b *builder) pause(fs *rootfs) error {
	bin, err := b.goBinary("github.com/glassplane/glassplane/test/conformance/pause")
	if err != nil {
		return err
	}
	fs.file("pause", 0o755, bin)
	return nil
}

// rootfs is an image's root filesystem, written as one layer.
type rootfs struct {
	entries map[string]*tar.Header
	data    map[string][]byte
	// passwd and group are written to /etc at the end.
	passwd, group []string
}

func newRootfs() *rootfs {
	return &rootfs{
		entries: map[string]*tar.Header{},
		data:    map[string][]byte{},
		passwd:  []string{"root:x:0:0:root:/root:/bin/sh", "nobody:x:65534:65534:nobody:/nonexistent:/bin/false"},
		group:   []string{"root:x:0:", "nogroup:x:65534:"},
	}
}

func (fs *rootfs) dir(name string, mode int64) {
	name = strings.Trim(name, "/")
	if parent := path.Dir(name); parent != "." {
		if _, ok := fs.entries[parent+"/"]; !ok {
			fs.dir(parent, 0o755)
		}
	}
	fs.entries[name+"/"] = &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}
}

func (fs *rootfs) file(name string, mode int64, data []byte) {
	name = strings.Trim(name, "/")
	if parent := path.Dir(name); parent != "." {
		fs.dir(parent, 0o755)
	}
	fs.entries[name] = &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}
	fs.data[name] = data
}

func (fs *rootfs) symlink(name, target string) {
	name = strings.Trim(name, "/")
	if parent := path.Dir(name); parent != "." {
		fs.dir(parent, 0o755)
	}
	fs.entries[name] = &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}
}

// lddLine matches ldd's "libx.so => /path (0x...)" and "/lib64/ld-linux... (0x...)".
var lddLine = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

// hostBinary copies a dynamically linked host binary and the shared
// libraries ldd resolves for it, at the same paths.
func (fs *rootfs) hostBinary(p string) error {
	bin, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("failed to read %q (installed by scripts/install-deps.sh test): %w", p, err)
	}
	fs.file(p, 0o755, bin)
	out, err := exec.Command("ldd", p).Output()
	if err != nil {
		return fmt.Errorf("failed to list the libraries of %q: %w", p, err)
	}
	for _, m := range lddLine.FindAllStringSubmatch(string(out), -1) {
		lib, err := os.ReadFile(m[1])
		if err != nil {
			return fmt.Errorf("failed to read %q for %q: %w", m[1], p, err)
		}
		fs.file(m[1], 0o755, lib)
	}
	return nil
}

// bashStatic is Debian's bash-static, every image's /bin/sh.
const bashStatic = "/bin/bash-static"

// busyboxBase adds the host's static busybox with its applets in /bin, its
// /bin/sh (bashStatic), and the directories every image has.
func (fs *rootfs) busyboxBase(busybox string) error {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("failed to read busybox %q: %w", busybox, err)
	}
	fs.file("bin/busybox", 0o755, bb)
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("failed to list busybox applets: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			fs.symlink("bin/"+applet, "busybox")
		}
	}
	// /bin/sh is Debian's bash-static, not busybox's ash: Debian builds
	// busybox-static with FEATURE_SH_STANDALONE, so its sh runs its own
	// applets before anything on PATH (the specs' "nc -v -t" got
	// busybox's nc, not the image's OpenBSD nc), and busybox 1.35's ash
	// drops environment variables whose names are not shell names
	// ("sh -c env" did not print data-1=value-1). The upstream images'
	// shells (Alpine's and busybox 1.37's ash) do neither; bash, as sh,
	// does neither either.
	bash, err := os.ReadFile(bashStatic)
	if err != nil {
		return fmt.Errorf("failed to read %q (installed by scripts/install-deps.sh test): %w", bashStatic, err)
	}
	fs.file("bin/bash", 0o755, bash)
	fs.symlink("bin/sh", "bash")
	fs.dir("tmp", 0o1777)
	for _, d := range []string{"root", "etc", "proc", "sys", "dev", "var", "usr/bin", "usr/sbin"} {
		fs.dir(d, 0o755)
	}
	fs.file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n"))
	return nil
}

// layer writes the root filesystem as an uncompressed, reproducible tar.
func (fs *rootfs) layer() ([]byte, error) {
	fs.file("etc/passwd", 0o644, []byte(strings.Join(fs.passwd, "\n")+"\n"))
	fs.file("etc/group", 0o644, []byte(strings.Join(fs.group, "\n")+"\n"))
	names := make([]string, 0, len(fs.entries))
	for n := range fs.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := *fs.entries[n]
		h.ModTime = time.Unix(0, 0)
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(fs.data[n]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archive returns img as an OCI image layout tar (what containerd's import
// and `glassplane image import` read), the image named by the
// io.containerd.image.name annotation.
func (b *builder) archive(img image) ([]byte, error) {
	fs := newRootfs()
	if err := fs.busyboxBase(b.busybox); err != nil {
		return nil, err
	}
	if err := img.build(b, fs); err != nil {
		return nil, fmt.Errorf("failed to build %s: %w", img.name, err)
	}
	layer, err := fs.layer()
	if err != nil {
		return nil, err
	}
	blobs := map[string][]byte{}
	put := func(mediaType string, data []byte) map[string]any {
		d := "sha256:" + sha256Hex(data)
		blobs[d] = data
		return map[string]any{"mediaType": mediaType, "digest": d, "size": len(data)}
	}
	layerDesc := put("application/vnd.oci.image.layer.v1.tar", layer)
	config, err := json.Marshal(map[string]any{
		"created":      "1970-01-01T00:00:00Z",
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Entrypoint": img.entrypoint,
			"Cmd":        img.cmd,
			"User":       img.user,
			"WorkingDir": "/",
			"Labels":     map[string]string{"org.opencontainers.image.description": "Glassplane conformance stand-in: " + img.from},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc["digest"].(string)}},
	})
	if err != nil {
		return nil, err
	}
	configDesc := put("application/vnd.oci.image.config.v1+json", config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configDesc,
		"layers":        []any{layerDesc},
	})
	if err != nil {
		return nil, err
	}
	manifestDesc := put("application/vnd.oci.image.manifest.v1+json", manifest)
	manifestDesc["platform"] = map[string]string{"os": "linux", "architecture": runtime.GOARCH}
	manifestDesc["annotations"] = map[string]string{
		"io.containerd.image.name":          img.name,
		"org.opencontainers.image.ref.name": img.name[strings.LastIndex(img.name, ":")+1:],
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []any{manifestDesc},
	})
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := write("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, err
	}
	if err := write("index.json", index); err != nil {
		return nil, err
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := write("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), blobs[d]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// k8sModuleDir returns the directory of the k8s.io/kubernetes module this
// module requires.
func k8sModuleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", fmt.Errorf("failed to find the k8s.io/kubernetes module: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildImages writes one OCI archive per image into dir, named after the
// image, and returns their paths.
// buildImages writes the images' OCI archives into dir. With specs (the
// names of the specs to run), an image only some specs run is built only
// when one of them is listed.
func buildImages(dir, busybox string, specs []string) ([]string, error) {
	k8sDir, err := k8sModuleDir()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "conformance-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b := &builder{work: work, k8sDir: k8sDir, busybox: busybox, built: map[string][]byte{}}
	var paths []string
	for _, img := range images {
		if img.only != "" && specs != nil && !slices.ContainsFunc(specs, func(s string) bool { return strings.HasPrefix(s, img.only) }) {
			fmt.Fprintf(os.Stderr, "skipped %s: none of the specs to run needs it\n", img.name)
			continue
		}
		archive, err := b.archive(img)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.name)+".tar")
		if err := os.WriteFile(p, archive, 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "built %s (%d MB) -> %s\n", img.name, len(archive)>>20, p)
		paths = append(paths, p)
	}
	return paths, nil
}
