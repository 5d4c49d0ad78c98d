package volumes

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A claim's mount step can hang in a plugin (ControllerPublish, NodeStage
// that never answers) for up to RPCTimeout; the volume's queue runs one
// pass per volume at a time, so a release asked meanwhile waited for that
// call: "release queued" for a minute after the allocation had failed.
// The step's call is recorded here while it is in flight, and a release of
// its claim cancels it: the release follows the stop at once, undoing
// whatever the cancelled call may have done (releaseStep undoes the step
// after the recorded one), and the claim's description names the call.

// claimKey names one allocation's claim on a volume.
type claimKey struct{ volumeID, allocID string }

// inflightCall is a mount step's plugin call in flight.
type inflightCall struct {
	method string
	since  time.Time
	cancel context.CancelFunc
	// released: cancelled for a release, not for a shutdown.
	released bool
}

// inflightCalls holds the mount steps in flight.
type inflightCalls struct {
	mu    sync.Mutex
	calls map[claimKey]*inflightCall
}

// start records that the claim's step is about to call method, and
// returns the step's context, and done, which ends the record; released
// reports whether a release cancelled the call.
func (f *inflightCalls) start(ctx context.Context, k claimKey, method string) (stepCtx context.Context, done func() (released bool)) {
	ctx, cancel := context.WithCancel(ctx)
	call := &inflightCall{method: method, since: time.Now(), cancel: cancel}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[claimKey]*inflightCall{}
	}
	f.calls[k] = call
	f.mu.Unlock()
	return ctx, func() bool {
		f.mu.Lock()
		if f.calls[k] == call {
			delete(f.calls, k)
		}
		released := call.released
		f.mu.Unlock()
		cancel()
		return released
	}
}

// release cancels the claim's call in flight, if any, and says what it
// cancelled ("" for nothing).
func (f *inflightCalls) release(k claimKey) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := f.calls[k]
	if call == nil {
		return ""
	}
	call.released = true
	call.cancel()
	return fmt.Sprintf("%s in flight for %s, cancelled", call.method, time.Since(call.since).Round(100*time.Millisecond))
}

// mountCall is the plugin call a mount step makes from state s.
func mountCall(s ClaimState) string {
	switch s {
	case ClaimPending:
		return "ControllerPublishVolume"
	case ClaimControllerPublished:
		return "NodeStageVolume"
	case ClaimStaged:
		return "NodePublishVolume"
	}
	return "mount step"
}
