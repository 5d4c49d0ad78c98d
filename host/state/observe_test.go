package state

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/csi"
)

type commitRecorder struct {
	mu      sync.Mutex
	commits int
	writes  int
}

func (r *commitRecorder) ObserveCommit(writes int, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && d > 0 {
		r.commits++
		r.writes += writes
	}
}

// Every write is reported once, inside the commit that carried it: a group
// commit reports its writes together.
func TestCommitObserverCountsWrites(t *testing.T) {
	rec := &commitRecorder{}
	db := openTest(t, statePath(t), Options{Commits: rec})
	// Open sets up a fresh file in commits of its own.
	rec.mu.Lock()
	rec.commits, rec.writes = 0, 0
	rec.mu.Unlock()
	if err := db.Update(func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := db.PutVolume(&csi.Volume{ID: fmt.Sprintf("v-%02d", i), PluginID: "p"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.writes != n+1 {
		t.Fatalf("%d writes reported, want %d", rec.writes, n+1)
	}
	if rec.commits < 2 || rec.commits > n+1 {
		t.Fatalf("%d commits reported for %d writes", rec.commits, n+1)
	}
}
