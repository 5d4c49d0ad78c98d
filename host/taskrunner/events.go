package taskrunner

import (
	"time"

	"github.com/pluginhost/pluginhost/host/state"
)

// Task event types, as Nomad names them.
const (
	EventReceived      = "Received"
	EventTaskSetup     = "Task Setup"
	EventSetupFailure  = "Setup Failure"
	EventDriverFailure = "Driver Failure"
	EventStarted       = "Started"
	EventReattached    = "Reattached"
	EventTerminated    = "Terminated"
	EventRestarting    = "Restarting"
	EventNotRestarting = "Not Restarting"
	EventRestartSignal = "Restart Signaled"
	EventKilling       = "Killing"
	EventKilled        = "Killed"
	EventSignaling     = "Signaling"
	EventKillFailed    = "Kill Failed"
	// EventSiblingFailed: another task of the allocation failed for good,
	// so this one is killed, as Nomad does.
	EventSiblingFailed = "Sibling Task Failed"
	// EventLogShipperGone: a re-adopted task's log shipper died meanwhile.
	EventLogShipperGone = "Log Shipper Gone"
	// EventUntrackedKilled: a restored task's copies that the previous
	// agent launched without living to record them were killed.
	EventUntrackedKilled = "Untracked Copy Killed"
)

func newEvent(typ, msg string) *state.TaskEvent {
	return &state.TaskEvent{Type: typ, Time: time.Now(), Message: msg}
}
