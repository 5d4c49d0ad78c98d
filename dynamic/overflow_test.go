package dynamic

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// TestOverflowKeepsOrder: readers that repeatedly stall until the writer is
// far ahead (overflowing their buffer, so delivery moves to a catch-up
// goroutine) and then read at full speed (so they rejoin direct delivery
// while the writer keeps publishing) must see every event exactly once, in
// order. The stalls are tied to the writer's progress, not to time, so each
// reader crosses the direct/catch-up boundary many times per run.
func TestOverflowKeepsOrder(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	const typ, readers, events = PluginTypeCSINode, 4, 20 * subBuffer
	info := node("p", "a1")
	mustRegister(t, r, info)

	// progress[k] is closed once the writer has published k*subBuffer events.
	progress := make([]chan struct{}, events/subBuffer+1)
	for k := range progress {
		progress[k] = make(chan struct{})
	}
	chans := make([]<-chan *Event, readers)
	for i := range chans {
		chans[i] = r.Subscribe(t.Context(), typ)
	}

	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	wg.Go(func() {
		close(progress[0])
		for i := 1; i <= events; i++ {
			info.Version = strconv.Itoa(i)
			if err := r.Register(info); err != nil {
				errs <- err
				return
			}
			if i%subBuffer == 0 {
				close(progress[i/subBuffer])
			}
		}
	})
	for n, ch := range chans {
		wg.Go(func() {
			for i := 1; i <= events; i++ {
				// Reader n stalls at a different phase of each buffer's
				// worth, until the writer is a buffer and a half ahead.
				if i%subBuffer == (n*subBuffer/readers)%subBuffer {
					if k := i/subBuffer + 2; k < len(progress) {
						<-progress[k]
					}
				}
				ev, ok := <-ch
				if !ok {
					errs <- fmt.Errorf("reader %d: closed before event %d", n, i)
					return
				}
				if ev.Info.Version != strconv.Itoa(i) {
					errs <- fmt.Errorf("reader %d: event %d carries version %s", n, i, ev.Info.Version)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, ch := range chans {
		expectNothingBefore(t, r, ch, typ)
	}
	r.Shutdown()
	for _, ch := range chans {
		waitClosed(t, ch)
	}
	done()
}
