package runtime

import (
	"context"
	"testing"
	"time"
)

func TestSimulatedExitCode(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		args    []string
		code    int
		ok      bool
	}{
		{name: "no command"},
		{name: "plain command", command: []string{"sleep", "10"}},
		{name: "sh -c exit 1", command: []string{"sh", "-c", "exit 1"}, code: 1, ok: true},
		{name: "args carry the script", command: []string{"sh"}, args: []string{"-c", "echo hi; exit 3"}, code: 3, ok: true},
		{name: "exit 0", args: []string{"sh", "-c", "true && exit 0"}, code: 0, ok: true},
		{name: "exit not last", command: []string{"sh", "-c", "exit 1; echo"}},
		{name: "out of range", command: []string{"sh", "-c", "exit 300"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, ok := simulatedExitCode(ContainerSpec{Command: tt.command, Args: tt.args})
			if code != tt.code || ok != tt.ok {
				t.Fatalf("simulatedExitCode = %d, %v; want %d, %v", code, ok, tt.code, tt.ok)
			}
		})
	}
}

// TestSimulatedContainerExitsWithItsExitStatement checks that a container
// whose command ends in "exit 1" finishes with status 1, even in a pod
// that restarts always.
func TestSimulatedContainerExitsWithItsExitStatement(t *testing.T) {
	ctx := context.Background()
	s := NewSimulated(SimulatedConfig{StartDelay: time.Millisecond, CompleteAfter: 20 * time.Millisecond})
	if _, err := s.PullImage(ctx, "busybox"); err != nil {
		t.Fatal(err)
	}
	pod := PodSpec{UID: "u1", Namespace: "default", Name: "p", RestartPolicy: "Always"}
	id, err := s.CreateContainer(ctx, pod, ContainerSpec{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "exit 1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		list, err := s.ListContainers(ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].State == StateExited {
			if list[0].ExitCode != 1 || list[0].Reason != "Error" {
				t.Fatalf("exited with %d (%s), want 1 (Error)", list[0].ExitCode, list[0].Reason)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("container never exited")
}
