package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestProcessArgs(t *testing.T) {
	tests := []struct {
		name                           string
		entrypoint, cmd, command, args []string
		want                           []string
	}{
		{"image defaults", []string{"/entry"}, []string{"serve"}, nil, nil, []string{"/entry", "serve"}},
		{"command replaces entrypoint and cmd", []string{"/entry"}, []string{"serve"}, []string{"sh"}, nil, []string{"sh"}},
		{"args replace cmd", []string{"/entry"}, []string{"serve"}, nil, []string{"debug"}, []string{"/entry", "debug"}},
		{"command and args", []string{"/entry"}, []string{"serve"}, []string{"sh", "-c"}, []string{"echo hi"}, []string{"sh", "-c", "echo hi"}},
		{"nothing", nil, nil, nil, nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProcessArgs(tc.entrypoint, tc.cmd, tc.command, tc.args); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ProcessArgs = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalizeImageRef(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "nginx", want: "docker.io/library/nginx:latest"},
		{in: "busybox:1.36", want: "docker.io/library/busybox:1.36"},
		{in: "glassplane.local/hello:latest", want: "glassplane.local/hello:latest"},
		{in: "ghcr.io/org/app", want: "ghcr.io/org/app:latest"},
		{in: "Bad Name", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeImageRef(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("NormalizeImageRef(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSimulatedLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		policy    string
		completes bool
	}{
		{"always runs until stopped", "Always", false},
		{"never completes", "Never", true},
		{"on-failure completes", "OnFailure", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := NewSimulated(SimulatedConfig{StartDelay: time.Millisecond, CompleteAfter: 50 * time.Millisecond})
			pod := PodSpec{UID: "u1", Namespace: "default", Name: "p", RestartPolicy: tc.policy}
			if _, ok, _ := s.ImageStatus(ctx, "nginx"); ok {
				t.Fatal("image present before pull")
			}
			if _, err := s.CreateContainer(ctx, pod, ContainerSpec{Name: "c", Image: "nginx"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("CreateContainer without image: %v, want ErrNotFound", err)
			}
			img, err := s.PullImage(ctx, "nginx")
			if err != nil || img.Ref != "docker.io/library/nginx:latest" {
				t.Fatalf("PullImage = %+v, %v", img, err)
			}
			if _, err := s.StartPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			id, err := s.CreateContainer(ctx, pod, ContainerSpec{Name: "c", Image: "nginx"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			list, _ := s.ListContainers(ctx, "u1")
			if len(list) != 1 || list[0].State != StateRunning || list[0].ImageID != img.ID {
				t.Fatalf("after start: %+v", list)
			}
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if list, _ = s.ListContainers(ctx, "u1"); list[0].State == StateExited {
					break
				}
				if !tc.completes && time.Since(list[0].StartedAt) > 200*time.Millisecond {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.completes {
				if list[0].State != StateExited || list[0].ExitCode != 0 || list[0].Reason != "Completed" {
					t.Fatalf("want completed, got %+v", list[0])
				}
			} else {
				if list[0].State != StateRunning {
					t.Fatalf("want still running, got %+v", list[0])
				}
				if err := s.StopPod(ctx, "u1", time.Second); err != nil {
					t.Fatal(err)
				}
				list, _ = s.ListContainers(ctx, "u1")
				if list[0].State != StateExited || list[0].ExitCode != 143 {
					t.Fatalf("after StopPod: %+v", list[0])
				}
			}
			if err := s.RemovePod(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			if list, _ = s.ListContainers(ctx, ""); len(list) != 0 {
				t.Fatalf("after RemovePod: %+v", list)
			}
		})
	}
}

func TestBuildDemoImage(t *testing.T) {
	if _, err := os.Stat(DemoBusybox); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("busybox-static is required in CI: %v", err)
		}
		t.Skipf("skipping: %s not present (install busybox-static)", DemoBusybox)
	}
	a, err := BuildDemoImage(DemoBusybox)
	if err != nil {
		t.Fatalf("BuildDemoImage: %v", err)
	}
	b, err := BuildDemoImage(DemoBusybox)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds from the same busybox differ")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json = %s (%v)", files["index.json"], err)
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; got != DemoImage {
		t.Errorf("image name annotation = %q, want %q", got, DemoImage)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(files[blobPath(index.Manifests[0].Digest)], &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	layer := map[string]*tar.Header{}
	lr := tar.NewReader(bytes.NewReader(files[blobPath(manifest.Layers[0].Digest)]))
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		layer[h.Name] = h
	}
	for _, name := range []string{"bin/busybox", "bin/sh", "bin/httpd", "bin/wget", "bin/sleep", "tmp/"} {
		if layer[name] == nil {
			t.Errorf("layer lacks %s", name)
		}
	}
	if h := layer["bin/sh"]; h != nil && (h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox") {
		t.Errorf("bin/sh = %+v, want symlink to busybox", h)
	}
}

// TestSimulatedWatchExitsReportsPod: a completing container's exit and a
// stopped container's exit are reported with their pod's UID, a container
// of an Always pod that keeps running is not, and nothing is reported once
// the watch has ended.
func TestSimulatedWatchExitsReportsPod(t *testing.T) {
	ctx := context.Background()
	s := NewSimulated(SimulatedConfig{StartDelay: time.Millisecond, CompleteAfter: 30 * time.Millisecond})
	if _, err := s.PullImage(ctx, "busybox"); err != nil {
		t.Fatal(err)
	}
	start := func(uid, policy string) string {
		t.Helper()
		pod := PodSpec{UID: uid, Namespace: "default", Name: uid, RestartPolicy: policy}
		if _, err := s.StartPod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		id, err := s.CreateContainer(ctx, pod, ContainerSpec{Name: "c", Image: "busybox"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	wctx, cancel := context.WithCancel(ctx)
	exits := make(chan string, 10)
	done := make(chan error, 1)
	go func() { done <- s.WatchExits(wctx, func(uid string) { exits <- uid }) }()
	// The watch is registered before it is needed: wait until it is.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.watchers)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("WatchExits did not start watching")
		}
	}
	start("always", "Always")
	start("never", "Never")
	select {
	case uid := <-exits:
		if uid != "never" {
			t.Fatalf("exit reported for pod %q, want the completing pod \"never\"", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the completing container's exit was not reported")
	}
	if list, _ := s.ListContainers(ctx, "never"); list[0].State != StateExited || list[0].Reason != "Completed" {
		t.Fatalf("reported exit, but the container is %+v", list[0])
	}
	if err := s.StopPod(ctx, "always", time.Second); err != nil {
		t.Fatal(err)
	}
	if uid := <-exits; uid != "always" {
		t.Fatalf("stop reported for pod %q, want \"always\"", uid)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("WatchExits after cancel = %v, want nil", err)
	}
	start("late", "Never")
	time.Sleep(100 * time.Millisecond)
	select {
	case uid := <-exits:
		t.Fatalf("exit of pod %q reported after the watch ended", uid)
	default:
	}
}

func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{
			rule: `POSTROUTING -s 10.88.0.0/24 ! -d 10.88.0.0/24 -m comment --comment "glassplane pod network glassplane" -j MASQUERADE`,
			want: []string{"POSTROUTING", "-s", "10.88.0.0/24", "!", "-d", "10.88.0.0/24", "-m", "comment", "--comment", "glassplane pod network glassplane", "-j", "MASQUERADE"},
		},
		{rule: `POSTROUTING -j RETURN`, want: []string{"POSTROUTING", "-j", "RETURN"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if got := splitRule(tc.rule); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("splitRule = %q, want %q", got, tc.want)
			}
		})
	}
}
