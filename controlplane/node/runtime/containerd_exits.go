package runtime

import (
	"context"
	"errors"
	"fmt"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/protobuf/proto"
)

// WatchExits calls exited with the pod UID of every container of this
// agent whose process exits (a task's init process: processes started by
// exec are left out), as containerd's /tasks/exit events report them. It
// blocks until ctx ends (nil) or the event stream fails (the error); exits
// while no one watches are not reported, so a caller that watches again
// must look at its containers once.
func (c *Containerd) WatchExits(ctx context.Context, exited func(podUID string)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	envelopes, errs := c.client.Subscribe(ctx, fmt.Sprintf(`topic=="/tasks/exit",namespace==%q`, c.cfg.Namespace))
	for {
		select {
		case env := <-envelopes:
			if env == nil || env.Event == nil {
				continue
			}
			var e apievents.TaskExit
			if err := proto.Unmarshal(env.Event.GetValue(), &e); err != nil {
				continue
			}
			if e.ID != e.ContainerID {
				continue
			}
			if uid := c.podOf(ctx, e.ContainerID); uid != "" {
				exited(uid)
			}
		case err := <-errs:
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				err = errors.New("event stream closed")
			}
			return fmt.Errorf("failed to watch container exits: %w", err)
		}
	}
}

// podOf returns the UID of the pod a container of this agent belongs
// to, "" for other containers and containers already deleted.
func (c *Containerd) podOf(ctx context.Context, id string) string {
	ctr, err := c.client.LoadContainer(ctx, id)
	if err != nil {
		return ""
	}
	info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil || info.Labels[LabelManaged] != "true" {
		return ""
	}
	return info.Labels[LabelPodUID]
}
