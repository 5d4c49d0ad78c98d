package state

import (
	"fmt"
	"sync"
	"testing"

	"github.com/pluginhost/pluginhost/csi/volumes"
)

// Every write is reported once, inside the commit that carried it: a group
// commit reports its writes together.
func TestCommitObserverCountsWrites(t *testing.T) {
	rec := &countCommits{}
	db := openTest(t, statePath(t), Options{Commits: rec})
	// Open sets up a fresh file in commits of its own.
	rec.mu.Lock()
	rec.commits, rec.write = 0, 0
	rec.mu.Unlock()
	if err := db.Update(func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%02d", i), PluginID: "p"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.write != n+1 {
		t.Fatalf("%d writes reported, want %d", rec.write, n+1)
	}
	if rec.commits < 2 || rec.commits > n+1 {
		t.Fatalf("%d commits reported for %d writes", rec.commits, n+1)
	}
}
