package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Defaults for SimulatedConfig.
const (
	DefaultSimulatedStartDelay    = 500 * time.Millisecond
	DefaultSimulatedCompleteAfter = 5 * time.Second
	// SimulatedVersion is what a simulated node reports as its runtime.
	SimulatedVersion = "simulated://0.1.0"
)

// SimulatedConfig tunes the simulated runtime.
type SimulatedConfig struct {
	// StartDelay is how long starting a container takes
	// (DefaultSimulatedStartDelay when zero).
	StartDelay time.Duration
	// CompleteAfter is how long a container of a pod with restartPolicy
	// Never or OnFailure runs before it exits 0, like KWOK's pod-complete
	// stage (DefaultSimulatedCompleteAfter when zero). Containers of
	// restartPolicy Always pods run until stopped; init containers always
	// complete.
	CompleteAfter time.Duration
}

// Simulated is a Runtime that runs no processes: containers move through
// the same states in memory.
type Simulated struct {
	cfg SimulatedConfig

	mu         sync.Mutex // guards containers, images, pods and watchers
	containers map[string]*simContainer
	images     map[string]Image
	pods       map[string]bool
	// watchers are the callbacks of WatchExits calls in progress.
	watchers map[*func(podUID string)]struct{}
}

type simContainer struct {
	status    ContainerStatus
	completes bool
	// exitCode is the status it completes with (see simulatedExitCode).
	exitCode int
}

var _ Runtime = (*Simulated)(nil)

// NewSimulated returns an empty simulated runtime.
func NewSimulated(cfg SimulatedConfig) *Simulated {
	if cfg.StartDelay <= 0 {
		cfg.StartDelay = DefaultSimulatedStartDelay
	}
	if cfg.CompleteAfter <= 0 {
		cfg.CompleteAfter = DefaultSimulatedCompleteAfter
	}
	return &Simulated{
		cfg:        cfg,
		containers: map[string]*simContainer{},
		images:     map[string]Image{},
		pods:       map[string]bool{},
		watchers:   map[*func(podUID string)]struct{}{},
	}
}

// Name implements Runtime.
func (s *Simulated) Name() string { return "simulated" }

// Version implements Runtime.
func (s *Simulated) Version(context.Context) (string, error) { return SimulatedVersion, nil }

// ImageStatus implements Runtime.
func (s *Simulated) ImageStatus(_ context.Context, ref string) (Image, bool, error) {
	norm, err := NormalizeImageRef(ref)
	if err != nil {
		return Image{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img, ok := s.images[norm]
	return img, ok, nil
}

// PullImage implements Runtime: any well-formed reference "pulls" at once.
func (s *Simulated) PullImage(_ context.Context, ref string) (Image, error) {
	norm, err := NormalizeImageRef(ref)
	if err != nil {
		return Image{}, err
	}
	named, err := reference.ParseNormalizedNamed(norm)
	if err != nil {
		return Image{}, fmt.Errorf("failed to parse image reference %q: %w", ref, err)
	}
	img := Image{
		Ref:  norm,
		ID:   named.Name() + "@" + digest.FromString(norm).String(),
		Size: 0,
	}
	s.mu.Lock()
	s.images[norm] = img
	s.mu.Unlock()
	return img, nil
}

// ListImages implements Runtime.
func (s *Simulated) ListImages(context.Context) ([]Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Image, 0, len(s.images))
	for _, img := range s.images {
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out, nil
}

// StartPod implements Runtime.
// Simulated pods have no network of their own: the agent makes up their
// addresses.
func (s *Simulated) StartPod(_ context.Context, pod PodSpec) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = true
	return "", nil
}

// CreateContainer implements Runtime.
func (s *Simulated) CreateContainer(_ context.Context, pod PodSpec, c ContainerSpec) (string, error) {
	norm, err := NormalizeImageRef(c.Image)
	if err != nil {
		return "", err
	}
	id, err := newContainerID()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img, ok := s.images[norm]
	if !ok {
		return "", fmt.Errorf("failed to create container %q: image %q: %w", c.Name, c.Image, ErrNotFound)
	}
	s.containers[id] = &simContainer{
		status: ContainerStatus{
			ID:           id,
			PodUID:       pod.UID,
			PodNamespace: pod.Namespace,
			PodName:      pod.Name,
			Name:         c.Name,
			Attempt:      c.Attempt,
			Image:        c.Image,
			ImageID:      img.ID,
			State:        StateCreated,
			CreatedAt:    time.Now(),
		},
		completes: c.Init || pod.RestartPolicy == "Never" || pod.RestartPolicy == "OnFailure",
	}
	if code, ok := simulatedExitCode(c); ok {
		s.containers[id].completes, s.containers[id].exitCode = true, code
	}
	return id, nil
}

// StartContainer implements Runtime: it takes StartDelay.
func (s *Simulated) StartContainer(ctx context.Context, id string) error {
	s.mu.Lock()
	_, ok := s.containers[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("failed to start container %q: %w", id, ErrNotFound)
	}
	t := time.NewTimer(s.cfg.StartDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("failed to start container %q: %w", id, ctx.Err())
	case <-t.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[id]
	if !ok {
		return fmt.Errorf("failed to start container %q: %w", id, ErrNotFound)
	}
	c.status.State = StateRunning
	c.status.StartedAt = time.Now()
	if c.completes {
		time.AfterFunc(s.cfg.CompleteAfter, func() { s.complete(id, c) })
	}
	return nil
}

// complete ends c, container id, once its time is up, and reports the exit.
func (s *Simulated) complete(id string, c *simContainer) {
	s.mu.Lock()
	if s.containers[id] != c || c.status.State != StateRunning {
		s.mu.Unlock()
		return
	}
	s.refreshLocked(c, time.Now())
	exited := c.status.State == StateExited
	s.mu.Unlock()
	if exited {
		s.reportExit(c.status.PodUID)
	}
}

// WatchExits calls exited with the pod UID of every container that exits
// (completes, or is stopped) while it runs, as containerd's exit events
// do, and blocks until ctx ends; it returns nil.
func (s *Simulated) WatchExits(ctx context.Context, exited func(podUID string)) error {
	s.mu.Lock()
	s.watchers[&exited] = struct{}{}
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	delete(s.watchers, &exited)
	s.mu.Unlock()
	return nil
}

// reportExit tells the watchers a container of the pod exited.
func (s *Simulated) reportExit(podUID string) {
	s.mu.Lock()
	watchers := make([]func(string), 0, len(s.watchers))
	for w := range s.watchers {
		watchers = append(watchers, *w)
	}
	s.mu.Unlock()
	for _, w := range watchers {
		w(podUID)
	}
}

// UpdateContainerResources implements Resizer: a simulated container has
// no cgroup, so a known one takes any resources.
func (s *Simulated) UpdateContainerResources(_ context.Context, id string, _ Resources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.containers[id]; !ok {
		return fmt.Errorf("failed to update container %q: %w", id, ErrNotFound)
	}
	return nil
}

// StopContainer implements Runtime: a simulated process exits on SIGTERM
// at once with status 143 (128+SIGTERM), as a shell would.
func (s *Simulated) StopContainer(_ context.Context, id string, _ time.Duration) error {
	s.mu.Lock()
	c, ok := s.containers[id]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("failed to stop container %q: %w", id, ErrNotFound)
	}
	stopped := s.stopLocked(c, time.Now())
	s.mu.Unlock()
	if stopped {
		s.reportExit(c.status.PodUID)
	}
	return nil
}

// StopPod implements Runtime, as StopContainer for each of the pod's
// containers.
func (s *Simulated) StopPod(_ context.Context, podUID string, _ time.Duration) error {
	s.mu.Lock()
	now := time.Now()
	stopped := false
	for _, c := range s.containers {
		if c.status.PodUID == podUID && s.stopLocked(c, now) {
			stopped = true
		}
	}
	s.mu.Unlock()
	if stopped {
		s.reportExit(podUID)
	}
	return nil
}

// stopLocked ends c if it still runs, and reports whether it did.
func (s *Simulated) stopLocked(c *simContainer, now time.Time) bool {
	s.refreshLocked(c, now)
	if c.status.State != StateRunning {
		return false
	}
	c.status.State = StateExited
	c.status.FinishedAt = now
	c.status.ExitCode = 143
	c.status.Reason = "Error"
	return true
}

// RemoveContainer implements Runtime.
func (s *Simulated) RemoveContainer(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.containers, id)
	return nil
}

// RemovePod implements Runtime.
func (s *Simulated) RemovePod(_ context.Context, podUID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.containers {
		if c.status.PodUID == podUID {
			delete(s.containers, id)
		}
	}
	delete(s.pods, podUID)
	return nil
}

// ListPods implements Runtime.
func (s *Simulated) ListPods(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for uid := range s.pods {
		seen[uid] = true
	}
	for _, c := range s.containers {
		seen[c.status.PodUID] = true
	}
	out := make([]string, 0, len(seen))
	for uid := range seen {
		out = append(out, uid)
	}
	sort.Strings(out)
	return out, nil
}

// ListContainers implements Runtime.
func (s *Simulated) ListContainers(_ context.Context, podUID string) ([]ContainerStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out []ContainerStatus
	for _, c := range s.containers {
		s.refreshLocked(c, now)
		if podUID == "" || c.status.PodUID == podUID {
			out = append(out, c.status)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// refreshLocked completes a running container whose time is up.
func (s *Simulated) refreshLocked(c *simContainer, now time.Time) {
	if !c.completes || c.status.State != StateRunning {
		return
	}
	if done := c.status.StartedAt.Add(s.cfg.CompleteAfter); !now.Before(done) {
		c.status.State = StateExited
		c.status.FinishedAt = done
		c.status.ExitCode = int32(c.exitCode)
		c.status.Reason = "Completed"
		if c.exitCode != 0 {
			c.status.Reason = "Error"
		}
	}
}

// NormalizeImageRef turns a pod's image into a full reference with a tag
// ("nginx" → "docker.io/library/nginx:latest").
func NormalizeImageRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("failed to parse image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// newContainerID returns a random 64-hex-digit ID, the shape CRI uses.
func newContainerID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("failed to generate container ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}
