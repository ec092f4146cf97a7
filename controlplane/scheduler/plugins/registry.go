package plugins

import (
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/imagelocality"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/interpodaffinity"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeaffinity"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodename"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeports"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/noderesources"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeunschedulable"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/podtopologyspread"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/queuesort"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/tainttoleration"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/volumebinding"
)

// NewInTreeRegistry returns the factories of every plugin shipped with
// Glassplane, by name.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		queuesort.Name:                       queuesort.New,
		nodeunschedulable.Name:               nodeunschedulable.New,
		nodename.Name:                        nodename.New,
		tainttoleration.Name:                 tainttoleration.New,
		nodeaffinity.Name:                    nodeaffinity.New,
		nodeports.Name:                       nodeports.New,
		noderesources.Name:                   noderesources.NewFit,
		noderesources.BalancedAllocationName: noderesources.NewBalancedAllocation,
		imagelocality.Name:                   imagelocality.New,
		interpodaffinity.Name:                interpodaffinity.New,
		podtopologyspread.Name:               podtopologyspread.New,
		volumebinding.Name:                   volumebinding.New,
	}
}
