package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// TestFinalStateIsPublished checks that a watcher of the event stream
// learns that a stopped allocation is complete: an event must follow the
// last state change, or waiters that read the state on each event hang.
func TestFinalStateIsPublished(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	for i := range 5 {
		m := e.markerFor("t")
		ids := a.runJob("final", jobHCL("final", restartPolicy, shTask("t", m, sleeper+" # "+string(rune('a'+i)))))
		a.waitAlloc(ids[len(ids)-1], "running", running("t"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		es, err := a.client.Events(ctx, api.TopicAllocation)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		a.stopJob("final")
		alloc := ids[len(ids)-1]
		for {
			ev, err := es.Next(ctx)
			if err != nil {
				cancel()
				t.Fatalf("round %d: no event showed allocation %s complete after job stop: %v", i, short(alloc), err)
			}
			if ev.Key == alloc && ev.Payload.Allocation != nil && ev.Payload.Allocation.ClientStatus == api.AllocClientStatusComplete {
				break
			}
		}
		cancel()
		_ = es.Close()
	}
}
