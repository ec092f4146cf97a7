package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The demo image: the host's static busybox in a one-layer OCI image,
// serving a page that names the pod.
const (
	DemoImage = "glassplane.local/hello:latest"
	// DemoBusybox is where Debian's busybox-static installs busybox.
	DemoBusybox = "/bin/busybox"
	// DemoPort is the port the demo image's httpd listens on.
	DemoPort = 8080
	// demoScript writes the page and runs httpd; sh stays PID 1 and exits
	// on SIGTERM so graceful deletion is quick. The page names the pod by
	// $HOSTNAME, which the runtime sets as CRI runtimes do (hostname runs
	// only where it is unset): pods start in bursts, and each process
	// started costs the node a fork and an exec. httpd -vv logs each
	// request's client, URL and status to stderr, which `kubectl logs`
	// shows.
	demoScript = `echo "<h1>Hello from ${HOSTNAME:-$(hostname)}</h1>" > /www/index.html; trap "exit 0" TERM; httpd -f -vv -p 8080 -h /www & wait`
)

// demoApplets are the busybox applets linked into /bin of the demo image;
// tar is what `kubectl cp` runs in the container.
var demoApplets = []string{
	"sh", "ash", "httpd", "wget", "sleep", "cat", "ls", "echo", "env", "printenv",
	"mkdir", "rm", "cp", "mv", "ln", "touch", "ps", "kill", "top", "hostname",
	"ip", "ifconfig", "nc", "nslookup", "date", "grep", "sed", "awk", "head", "tail",
	"wc", "sort", "true", "false", "id", "whoami", "uname", "df", "du", "free", "vi",
	"test", "[", "find", "xargs", "tee", "yes", "seq", "timeout", "tar", "gzip", "gunzip",
}

// BuildDemoImage returns an OCI image archive (the `oci-layout` tar that
// client.Import reads) of DemoImage built from the busybox binary at
// busyboxPath. The archive is the same for the same binary.
func BuildDemoImage(busyboxPath string) ([]byte, error) {
	archive, _, err := buildDemoImage(busyboxPath)
	return archive, err
}

// buildDemoImage is BuildDemoImage, also returning the manifest's digest
// (the image's identity in containerd).
func buildDemoImage(busyboxPath string) ([]byte, digest.Digest, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, "", fmt.Errorf("failed to read busybox %q: %w", busyboxPath, err)
	}
	layer, err := demoLayer(bb)
	if err != nil {
		return nil, "", err
	}
	layerDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(layer), Size: int64(len(layer))}
	created := time.Unix(0, 0).UTC()
	platform := ocispec.Platform{OS: "linux", Architecture: goruntime.GOARCH}
	config, err := json.Marshal(ocispec.Image{
		Created:  &created,
		Platform: platform,
		Config: ocispec.ImageConfig{
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cmd:          []string{"sh", "-c", demoScript},
			WorkingDir:   "/",
			ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", DemoPort): {}},
			Labels:       map[string]string{"org.opencontainers.image.title": "Glassplane hello"},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return nil, "", fmt.Errorf("failed to encode image config: %w", err)
	}
	configDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return nil, "", fmt.Errorf("failed to encode image manifest: %w", err)
	}
	manifestDesc := ocispec.Descriptor{
		MediaType: ocispec.MediaTypeImageManifest,
		Digest:    digest.FromBytes(manifest),
		Size:      int64(len(manifest)),
		Platform:  &platform,
		Annotations: map[string]string{
			"io.containerd.image.name": DemoImage,
			ocispec.AnnotationRefName:  "latest",
		},
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return nil, "", fmt.Errorf("failed to encode image index: %w", err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return nil, "", fmt.Errorf("failed to encode image layout: %w", err)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"index.json", index},
		{blobPath(layerDesc.Digest), layer},
		{blobPath(configDesc.Digest), config},
		{blobPath(manifestDesc.Digest), manifest},
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: created}); err != nil {
			return nil, "", fmt.Errorf("failed to write image archive: %w", err)
		}
	}
	for _, f := range files {
		if err := writeTarFile(tw, f.name, 0o644, f.data, created); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("failed to write image archive: %w", err)
	}
	return buf.Bytes(), manifestDesc.Digest, nil
}

func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

// demoLayer is an uncompressed layer tar: /bin/busybox with its applets
// as symlinks, /tmp, /www and a minimal /etc.
func demoLayer(busybox []byte) ([]byte, error) {
	mtime := time.Unix(0, 0).UTC()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"root/", 0o700}, {"tmp/", 0o1777}, {"www/", 0o755}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("failed to write image layer: %w", err)
		}
	}
	if err := writeTarFile(tw, "bin/busybox", 0o755, busybox, mtime); err != nil {
		return nil, err
	}
	for _, a := range demoApplets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("failed to write image layer: %w", err)
		}
	}
	etc := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for _, name := range []string{"etc/group", "etc/passwd"} {
		if err := writeTarFile(tw, name, 0o644, []byte(etc[name]), mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("failed to write image layer: %w", err)
	}
	return buf.Bytes(), nil
}

func writeTarFile(tw *tar.Writer, name string, mode int64, data []byte, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return fmt.Errorf("failed to write %q to archive: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("failed to write %q to archive: %w", name, err)
	}
	return nil
}

// EnsureDemoImage builds DemoImage from DemoBusybox and imports it unless
// the same image is already present: one an earlier Glassplane built (an
// older script or applet list) is replaced.
func (c *Containerd) EnsureDemoImage(ctx context.Context) error {
	archive, manifest, err := buildDemoImage(DemoBusybox)
	if err != nil {
		return err
	}
	img, ok, err := c.ImageStatus(ctx, DemoImage)
	if err != nil || ok && strings.HasSuffix(img.ID, "@"+manifest.String()) {
		return err
	}
	if _, err := c.ImportImage(ctx, bytes.NewReader(archive)); err != nil {
		return fmt.Errorf("failed to import image %q: %w", DemoImage, err)
	}
	return nil
}
