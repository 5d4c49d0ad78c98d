package taskrunner

import (
	"time"

	"github.com/pluginhost/pluginhost/host/state"
)

// RestartNow restarts the running task at once, outside its restart
// policy: no delay and no attempt counted. It is for restarts the agent
// needs for reasons of its own, not because the task failed (a go-plugin
// plugin whose GRPCBroker a departed consumer closed). The "Restart
// Signaled" event carries reason. A task that is not running is left
// alone.
func (tr *TaskRunner) RestartNow(reason string) {
	select {
	case tr.restartCh <- restartRequest{reason: reason, now: true}:
	default: // one pending request is enough
	}
}

// takeRestartNow reports, once, whether the launch that ended was killed
// by RestartNow.
func (tr *TaskRunner) takeRestartNow() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := tr.restartNow
	tr.restartNow = false
	return now
}

// restartAtOnce records the Restarting event of a RestartNow: pending again,
// one more restart, no delay.
func (tr *TaskRunner) restartAtOnce() {
	ev := newEvent(EventRestarting, "Task restarting in 0s")
	ev.Details = map[string]string{"restart_delay": "0s", "reason": "restart requested by the agent"}
	tr.apply(change{events: []*state.TaskEvent{ev}, state: func(s *state.TaskState) {
		s.State = state.TaskStatePending
		s.Restarts++
		s.LastRestart = time.Now()
	}})
}
