package taskrunner

import (
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/state"
)

func toStateHandle(h *driver.Handle, logmonPid int, logmonStart uint64) *state.TaskHandle {
	sh := &state.TaskHandle{
		Driver: h.Driver, Pid: h.Pid, StartTime: h.StartTime, SocketPath: h.SocketPath,
		LogmonPid: logmonPid, LogmonStartTime: logmonStart, CgroupPath: h.CgroupPath,
	}
	if r := h.Reattach; r != nil {
		rc := *r
		sh.Reattach = &rc
	}
	return sh
}

func toDriverHandle(h *state.TaskHandle) *driver.Handle {
	dh := &driver.Handle{Driver: h.Driver, Pid: h.Pid, StartTime: h.StartTime, SocketPath: h.SocketPath, CgroupPath: h.CgroupPath}
	if r := h.Reattach; r != nil {
		rc := *r
		dh.Reattach = &rc
	}
	return dh
}
