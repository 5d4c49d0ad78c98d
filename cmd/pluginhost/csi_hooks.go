package main

import (
	"github.com/pluginhost/pluginhost/host"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// csiPluginHooks gives tasks with a csi_plugin block the CSI supervisor.
func csiPluginHooks(a *host.Agent) func(req *taskrunner.HookRequest) []taskrunner.Hook {
	return nil
}
