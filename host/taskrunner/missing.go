package taskrunner

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/driver"
)

// missingDriver stands in for a driver the agent does not have, so that
// restoring such a task reports it instead of dropping the allocation.
type missingDriver struct{ name string }

func (d missingDriver) Name() string { return d.name }

func (d missingDriver) Start(context.Context, *driver.StartRequest) (driver.Task, error) {
	return nil, fmt.Errorf("driver %q is not available on this agent", d.name)
}

func (d missingDriver) Recover(context.Context, *driver.Handle, hclog.Logger) (driver.Task, error) {
	return nil, fmt.Errorf("driver %q is not available on this agent", d.name)
}
