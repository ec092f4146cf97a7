package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// requireContainerd fails the test in CI (CI=true) and skips it elsewhere
// when this host cannot run containerd.
func requireContainerd(t *testing.T) {
	t.Helper()
	if ok, why := CanRunContainerd(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("containerd is required in CI: %s", why)
		}
		t.Skipf("skipping containerd test: %s (set CI=true to make this a failure)", why)
	}
}

// startTestContainerd runs a managed containerd in a short temp dir (unix
// socket paths are limited to ~100 bytes) and connects to it.
func startTestContainerd(t *testing.T, ctx context.Context) *Containerd {
	t.Helper()
	requireContainerd(t)
	dir, err := os.MkdirTemp("", "gp-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	m, err := StartManagedContainerd(mctx, dir)
	if err != nil {
		cancel()
		t.Fatalf("StartManagedContainerd: %v", err)
	}
	network, err := NewNetwork(NetworkConfig{Name: "glassplane-test", Bridge: "gptest0", PodCIDR: "10.89.0.0/24", CacheDir: dir + "/cni"})
	if err != nil {
		cancel()
		t.Fatalf("NewNetwork: %v", err)
	}
	rt, err := NewContainerd(ctx, ContainerdConfig{Address: m.Address(), Namespace: "glassplane-test", StateDir: dir + "/pods", PullTimeout: 30 * time.Second, Network: network})
	if err != nil {
		cancel()
		t.Fatalf("NewContainerd: %v", err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if uids, err := rt.ListPods(cctx); err == nil {
			for _, uid := range uids {
				_ = rt.RemovePod(cctx, uid)
			}
		}
		rt.Close()
		cancel()
		if err := m.Wait(); err != nil {
			t.Errorf("containerd exited with an error: %v", err)
		}
		os.RemoveAll(dir)
	})
	return rt
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func findContainer(t *testing.T, ctx context.Context, rt Runtime, podUID, id string) (ContainerStatus, bool) {
	t.Helper()
	list, err := rt.ListContainers(ctx, podUID)
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	for _, c := range list {
		if c.ID == id {
			return c, true
		}
	}
	return ContainerStatus{}, false
}

func TestContainerdRunsDemoPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)

	v, err := rt.Version(ctx)
	if err != nil || !strings.HasPrefix(v, "containerd://") {
		t.Fatalf("Version = %q, %v; want containerd://...", v, err)
	}
	// A demo image an earlier Glassplane built (another script or applet
	// list) is replaced by this one's.
	fake := t.TempDir() + "/busybox"
	if err := os.WriteFile(fake, []byte("an older demo image"), 0o755); err != nil {
		t.Fatal(err)
	}
	older, err := BuildDemoImage(fake)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ImportImage(ctx, bytes.NewReader(older)); err != nil {
		t.Fatalf("ImportImage: %v", err)
	}
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	img, ok, err := rt.ImageStatus(ctx, DemoImage)
	if err != nil || !ok {
		t.Fatalf("ImageStatus(%q) = %v, %v; want present", DemoImage, ok, err)
	}
	_, manifest, err := buildDemoImage(DemoBusybox)
	if err != nil {
		t.Fatal(err)
	}
	if want := "glassplane.local/hello@" + manifest.String(); img.ID != want {
		t.Errorf("image ID = %q, want %q (this Glassplane's demo image)", img.ID, want)
	}

	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000001", Namespace: "default", Name: "hello", RestartPolicy: "Always"}
	if _, err := rt.StartPod(ctx, pod); err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	if _, err := os.Stat(NetnsPath(pod.UID)); err != nil {
		t.Fatalf("pod network namespace: %v", err)
	}
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "web", Image: DemoImage, MemoryBytes: 64 << 20, CPUMillis: 500})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	st, ok := findContainer(t, ctx, rt, pod.UID, id)
	if !ok || st.State != StateRunning || st.Name != "web" || st.PodName != "hello" || st.StartedAt.IsZero() {
		t.Fatalf("container status = %+v (found %v); want running web of pod hello", st, ok)
	}

	ctr, err := rt.Client().LoadContainer(ctx, id)
	if err != nil {
		t.Fatalf("LoadContainer: %v", err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		t.Fatalf("Task: %v", err)
	}
	var page string
	waitFor(t, "the demo page over wget inside the pod", time.Minute, func() (bool, error) {
		var out, errOut bytes.Buffer
		proc, err := task.Exec(ctx, "wget-"+time.Now().Format("150405.000000000"), &specs.Process{
			Args: []string{"wget", "-q", "-O", "-", "http://127.0.0.1:8080/"},
			Env:  []string{"PATH=/bin"},
			Cwd:  "/",
		}, cio.NewCreator(cio.WithStreams(nil, &out, &errOut)))
		if err != nil {
			return false, err
		}
		defer proc.Delete(ctx)
		exitCh, err := proc.Wait(ctx)
		if err != nil {
			return false, err
		}
		if err := proc.Start(ctx); err != nil {
			return false, err
		}
		<-exitCh
		proc.IO().Wait()
		page = out.String()
		return strings.Contains(page, "Hello from hello"), fmt.Errorf("wget said %q", errOut.String())
	})

	start := time.Now()
	if err := rt.StopPod(ctx, pod.UID, 30*time.Second); err != nil {
		t.Fatalf("StopPod: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("StopPod took %s; the demo shell should exit on SIGTERM", took)
	}
	st, _ = findContainer(t, ctx, rt, pod.UID, id)
	if st.State != StateExited || st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("after SIGTERM status = %+v; want exited 0 Completed", st)
	}
	if err := rt.RemovePod(ctx, pod.UID); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if list, err := rt.ListContainers(ctx, pod.UID); err != nil || len(list) != 0 {
		t.Errorf("containers after RemovePod = %v, %v; want none", list, err)
	}
	if _, err := os.Stat(NetnsPath(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("network namespace still present after RemovePod: %v", err)
	}
}

func TestContainerdSeparateLogsAndExitCodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	tests := []struct {
		name     string
		command  []string
		env      []string
		readOnly bool
		wantCode int32
		reason   string
		stdout   string
		stderr   string
	}{
		{"success", []string{"sh", "-c", "echo out-$GREETING; echo err-line >&2"}, []string{"GREETING=hi"}, false, 0, "Completed", "out-hi\n", "err-line\n"},
		{"failure", []string{"sh", "-c", "echo failing >&2; exit 3"}, nil, false, 3, "Error", "", "failing\n"},
		// A read-only root still gets the pod's /etc/hosts (its mount point
		// is made before the root is made read-only).
		{"read-only root", []string{"sh", "-c", "grep localhost /etc/hosts | head -1; touch /written || echo refused >&2"}, nil, true, 0, "Completed", "127.0.0.1\tlocalhost\n", "touch: /written: Read-only file system\nrefused\n"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-00000000010" + string(rune('0'+i)), Namespace: "default", Name: "job-" + tc.name, RestartPolicy: "Never"}
			if _, err := rt.StartPod(ctx, pod); err != nil {
				t.Fatalf("StartPod: %v", err)
			}
			st := runToExit(t, ctx, rt, pod, ContainerSpec{Name: "main", Image: DemoImage, Command: tc.command, Env: tc.env, ReadOnlyRootFS: tc.readOnly})
			if st.ExitCode != tc.wantCode || st.Reason != tc.reason || st.FinishedAt.IsZero() {
				t.Errorf("status = %+v; want exit %d %s", st, tc.wantCode, tc.reason)
			}
			logPath := rt.LogPath(pod.UID, "main", 0)
			waitFor(t, "logs", 10*time.Second, func() (bool, error) {
				out, errOut := logStreams(t, logPath)
				return out == tc.stdout && errOut == tc.stderr, nil
			})
			if err := rt.RemovePod(ctx, pod.UID); err != nil {
				t.Fatalf("RemovePod: %v", err)
			}
		})
	}
}

func TestContainerdStopKillsAfterGrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000201", Namespace: "default", Name: "stubborn", HostNetwork: true}
	if _, err := rt.StartPod(ctx, pod); err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	// sh as PID 1 without a trap ignores SIGTERM, so only SIGKILL ends it.
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "main", Image: DemoImage, Command: []string{"sh", "-c", "while true; do sleep 1; done"}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	if err := rt.StopPod(ctx, pod.UID, time.Second); err != nil {
		t.Fatalf("StopPod: %v", err)
	}
	st, _ := findContainer(t, ctx, rt, pod.UID, id)
	if st.State != StateExited || st.ExitCode != 128+int32(syscall.SIGKILL) {
		t.Errorf("status = %+v; want exited 137 (SIGKILL)", st)
	}
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if _, ok := findContainer(t, ctx, rt, pod.UID, id); ok {
		t.Errorf("container %s still listed after RemoveContainer", id)
	}
}

func TestContainerdPullUnknownImageFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if _, ok, err := rt.ImageStatus(ctx, "glassplane.invalid/nothing:1"); err != nil || ok {
		t.Fatalf("ImageStatus of unknown image = %v, %v; want absent", ok, err)
	}
	_, err := rt.PullImage(ctx, "glassplane.invalid/nothing:1")
	if err == nil || !strings.Contains(err.Error(), `failed to pull and unpack image "glassplane.invalid/nothing:1"`) {
		t.Fatalf("PullImage error = %v; want failed to pull and unpack image ...", err)
	}
}

func TestContainerdReattachesLogsAfterRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000301", Namespace: "default", Name: "ticker", HostNetwork: true}
	if _, err := rt.StartPod(ctx, pod); err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "main", Image: DemoImage, Command: []string{"sh", "-c", "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.05; done"}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	outPath := rt.LogPath(pod.UID, "main", 0)
	size := func() int64 {
		fi, err := os.Stat(outPath)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	waitFor(t, "first output", 30*time.Second, func() (bool, error) { return size() > 0, nil })

	// A second Containerd on the same daemon and state is what a restarted
	// agent has: it did not create the task, so it must reattach its output.
	again, err := NewContainerd(ctx, rt.cfg)
	if err != nil {
		t.Fatalf("NewContainerd: %v", err)
	}
	defer again.Close()
	rt.closeFiles(id)
	before := size()
	if _, ok := findContainer(t, ctx, again, pod.UID, id); !ok {
		t.Fatalf("container %s not listed by the new runtime", id)
	}
	waitFor(t, "output to keep flowing after reattach", 30*time.Second, func() (bool, error) {
		return size() > before+200, nil
	})
	if err := again.RemovePod(ctx, pod.UID); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
}

// logStreams splits a CRI log file into its stdout and stderr text.
func logStreams(t *testing.T, path string) (stdout, stderr string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	var out, errOut strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		parts := strings.SplitN(line, " ", 4)
		if len(parts) < 4 {
			continue
		}
		b := &out
		if parts[1] == "stderr" {
			b = &errOut
		}
		b.WriteString(parts[3])
		if parts[2] == "F" {
			b.WriteString("\n")
		}
	}
	return out.String(), errOut.String()
}

func TestContainerdExec(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000401", Namespace: "default", Name: "exec", HostNetwork: true}
	if _, err := rt.StartPod(ctx, pod); err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "main", Image: DemoImage, Env: []string{"GREETING=hi"}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	tests := []struct {
		name       string
		opts       ExecOptions
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "env and exit code", opts: ExecOptions{Cmd: []string{"sh", "-c", "echo $GREETING; echo err >&2; exit 3"}}, wantCode: 3, wantStdout: "hi\n", wantStderr: "err\n"},
		{name: "stdin to EOF", opts: ExecOptions{Cmd: []string{"cat"}, Stdin: strings.NewReader("piped\n")}, wantStdout: "piped\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			tt.opts.Stdout, tt.opts.Stderr = &out, &errOut
			code, err := rt.Exec(ctx, id, tt.opts)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if code != tt.wantCode || out.String() != tt.wantStdout || errOut.String() != tt.wantStderr {
				t.Errorf("Exec = %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestContainerdReportsOOMKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000501", Namespace: "default", Name: "hog", HostNetwork: true}
	if _, err := rt.StartPod(ctx, pod); err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	// sh keeps doubling a variable until the 16 MiB limit stops it.
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "main", Image: DemoImage, MemoryBytes: 16 << 20,
		Command: []string{"sh", "-c", "x=0123456789abcdef; while true; do x=$x$x; done"}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	var st ContainerStatus
	waitFor(t, "the container to be killed", 2*time.Minute, func() (bool, error) {
		st, _ = findContainer(t, ctx, rt, pod.UID, id)
		return st.State == StateExited, nil
	})
	if st.Reason != "OOMKilled" || st.ExitCode != 137 {
		t.Errorf("status = %+v; want exit 137 OOMKilled", st)
	}
}

// WatchExits reports the pod of a container whose process exits, and not
// the processes run by exec.
func TestContainerdWatchExitsReportsPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	exits := make(chan string, 100)
	wctx, wcancel := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- rt.WatchExits(wctx, func(uid string) { exits <- uid }) }()

	run := func(pod PodSpec, attempt int, command ...string) string {
		t.Helper()
		if _, err := rt.StartPod(ctx, pod); err != nil {
			t.Fatalf("StartPod: %v", err)
		}
		id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "main", Image: DemoImage, Attempt: attempt, Command: command})
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatalf("StartContainer: %v", err)
		}
		return id
	}
	// Subscribing is asynchronous: containers of a first pod exit until
	// one exit is reported, which shows that the watch is in place.
	first := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000601", Namespace: "default", Name: "first", HostNetwork: true}
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("no exit of 20 containers reported")
		}
		run(first, attempt, "true")
		select {
		case uid := <-exits:
			if uid != first.UID {
				t.Fatalf("exit reported for pod %q, want %q", uid, first.UID)
			}
		case <-time.After(3 * time.Second):
			continue
		}
		break
	}
	loop := []string{"sh", "-c", "trap 'exit 3' TERM; while true; do sleep 0.1; done"}
	execed := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000602", Namespace: "default", Name: "execed", HostNetwork: true}
	execedID := run(execed, 0, loop...)
	exiting := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000603", Namespace: "default", Name: "exiting", HostNetwork: true}
	exitingID := run(exiting, 0, loop...)
	if code, err := rt.Exec(ctx, execedID, ExecOptions{Cmd: []string{"true"}}); err != nil || code != 0 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	if err := rt.StopContainer(ctx, exitingID, time.Minute); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	// Events come in order: the exec's exit would come first.
	for {
		select {
		case uid := <-exits:
			if uid == first.UID {
				continue // a later attempt of the first pod
			}
			if uid != exiting.UID {
				t.Fatalf("exit reported for pod %q, want %q (the exec'd process's exit is no container exit)", uid, exiting.UID)
			}
		case <-time.After(time.Minute):
			t.Fatal("no exit reported within a minute")
		}
		break
	}
	wcancel()
	if err := <-watchDone; err != nil {
		t.Errorf("WatchExits after cancel = %v, want nil", err)
	}
}

// PreparePod makes the pod's network namespace without attaching it: a
// container can be created in it, and StartPod then attaches the pod and
// gives it an address before the container starts.
func TestContainerdPreparePodThenAttach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	pod := PodSpec{UID: "0d1c2b3a-0000-4000-8000-000000000701", Namespace: "default", Name: "prepared"}
	if err := rt.PreparePod(ctx, pod); err != nil {
		t.Fatalf("PreparePod: %v", err)
	}
	if !isNetns(NetnsPath(pod.UID)) {
		t.Fatalf("no network namespace at %s after PreparePod", NetnsPath(pod.UID))
	}
	if res, err := rt.Network().cni.GetNetworkListCachedResult(rt.Network().list, rt.Network().runtimeConf(pod.UID, NetnsPath(pod.UID), &pod)); err != nil || res != nil {
		t.Fatalf("cached CNI result after PreparePod = %v, %v; want none (not attached yet)", res, err)
	}
	id, err := rt.CreateContainer(ctx, pod, ContainerSpec{Name: "web", Image: DemoImage})
	if err != nil {
		t.Fatalf("CreateContainer before the attach: %v", err)
	}
	ip, err := rt.StartPod(ctx, pod)
	if err != nil || !strings.HasPrefix(ip, "10.89.0.") {
		t.Fatalf("StartPod = %q, %v; want an address in 10.89.0.0/24", ip, err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	var out bytes.Buffer
	if code, err := rt.Exec(ctx, id, ExecOptions{Cmd: []string{"sh", "-c", "ip -4 addr show eth0 2>/dev/null || cat /proc/net/fib_trie"}, Stdout: &out}); err != nil || code != 0 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	if !strings.Contains(out.String(), ip) {
		t.Errorf("the container's network shows no %s:\n%s", ip, out.String())
	}
}

// A container's termination message is what it wrote to the file at its
// terminationMessagePath; a failed one that wrote none may take the end of
// its log instead (FallbackToLogsOnError), and one that succeeded does not.
func TestContainerdTerminationMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	long := strings.Repeat("x", 3000)
	tests := []struct {
		name     string
		path     string
		fromLogs bool
		script   string
		want     string
	}{
		{"file", "/dev/termination-log", false, "printf 'all done' > /dev/termination-log", "all done"},
		{"file elsewhere, user not root", "/tmp/msg", false, "printf 'as 1000' > /tmp/msg", "as 1000"},
		{"file wins over logs", "/dev/termination-log", true, "echo noise; printf 'from file' > /dev/termination-log; exit 2", "from file"},
		{"logs on failure", "/dev/termination-log", true, "for i in $(seq 1 100); do echo line-$i; done; exit 1", tailLines(21, 100)},
		{"logs bounded to 2048 bytes", "/dev/termination-log", true, "echo " + long + "; exit 1", strings.Repeat("x", 2047) + "\n"},
		{"no logs on success", "/dev/termination-log", true, "echo fine", ""},
		// The conformance spec's: output without a newline is a line.
		{"logs without a newline", "/dev/termination-log", true, "echo -n DONE; false", "DONE"},
		{"no file", "", false, "echo none", ""},
		// A message file at /etc/hosts takes the place of the pod's.
		{"file at /etc/hosts", "/etc/hosts", false, "printf mine > /etc/hosts", "mine"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := PodSpec{UID: fmt.Sprintf("0d1c2b3a-0000-4000-8000-0000000002%02d", i), Namespace: "default", Name: "msg", RestartPolicy: "Never"}
			if _, err := rt.StartPod(ctx, pod); err != nil {
				t.Fatalf("StartPod: %v", err)
			}
			spec := ContainerSpec{Name: "main", Image: DemoImage, Command: []string{"sh", "-c", tc.script},
				TerminationMessagePath: tc.path, TerminationMessageFromLogs: tc.fromLogs}
			if strings.Contains(tc.name, "not root") {
				spec.RunAsUser = new(int64(1000))
			}
			st := runToExit(t, ctx, rt, pod, spec)
			if st.Message != tc.want {
				t.Errorf("message = %q, want %q", st.Message, tc.want)
			}
			if err := rt.RemovePod(ctx, pod.UID); err != nil {
				t.Fatalf("RemovePod: %v", err)
			}
		})
	}
}

// runToExit creates and starts a container in pod and waits for it to exit.
func runToExit(t *testing.T, ctx context.Context, rt *Containerd, pod PodSpec, spec ContainerSpec) ContainerStatus {
	t.Helper()
	id, err := rt.CreateContainer(ctx, pod, spec)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	var st ContainerStatus
	waitFor(t, "the container to exit", time.Minute, func() (bool, error) {
		st, _ = findContainer(t, ctx, rt, pod.UID, id)
		return st.State == StateExited, nil
	})
	return st
}

// tailLines is "line-from\n" … "line-to\n".
func tailLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line-%d\n", i)
	}
	return b.String()
}
