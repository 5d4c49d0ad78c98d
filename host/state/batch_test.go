package state

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi/volumes"
)

// Concurrent volume writes share commits; every one lands, and a write
// whose function fails fails alone: the others of its transaction are
// committed without it.
func TestBatchConcurrentPutVolume(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	errBad := errors.New("bad write")
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%8 == 3 {
				// A write that fails inside the transaction, after
				// putting something that must not land.
				errs[i] = db.batch(fmt.Sprintf("bad %d", i), func(tx *bbolt.Tx) error {
					if err := putJSON(tx.Bucket([]byte(bucketVolumes)), []byte(fmt.Sprintf("bad-%02d", i)), &volumes.Volume{ID: "x"}); err != nil {
						return err
					}
					return errBad
				})
				return
			}
			errs[i] = db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%02d", i), PluginID: "p"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i%8 == 3 && !errors.Is(err, errBad):
			t.Errorf("bad write %d: %v, want errBad", i, err)
		case i%8 != 3 && err != nil:
			t.Errorf("PutVolume %d: %v", i, err)
		}
	}
	check := func(db *DB) {
		t.Helper()
		vols, err := db.Volumes()
		if err != nil {
			t.Fatal(err)
		}
		if want := n - n/8; len(vols) != want {
			t.Fatalf("%d volumes stored, want %d", len(vols), want)
		}
		for _, v := range vols {
			if v.ID[:2] != "v-" {
				t.Fatalf("volume %q stored", v.ID)
			}
		}
	}
	check(db)
	// Durable: they are in the file.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check(openTest(t, path, Options{}))
}

// A lone write commits at once: no timer holds it back. The wait for more
// writers is made long, so that a lone write that waited at all would
// fail the test, not just add 2 ms.
func TestBatchLoneWriteIsNotDelayed(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	db.bolt.NoSync = true // only the batching is timed
	db.batcher.window, db.batcher.minGap = 2*time.Second, 2*time.Second
	start := time.Now()
	for i := range 20 {
		if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%d", i), PluginID: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("20 lone writes took %v", took)
	}
	if err := db.DeleteVolume("v-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Volume("v-0"); !errors.Is(err, volumes.ErrVolumeNotFound) {
		t.Fatalf("deleted volume: %v", err)
	}
}

// BenchmarkPutVolume is one volume write, durable: alone (the latency a
// single `volume create` pays) and from 16 writers at once (the volume
// manager's workers), where writes share commits.
func BenchmarkPutVolume(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := openTest(b, statePath(b), Options{})
			var mu sync.Mutex
			n := 0
			b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0))) // about `writers` goroutines
			if writers == 1 {
				for b.Loop() {
					n++
					if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%d", n%100), PluginID: "p"}); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					mu.Lock()
					n++
					id := fmt.Sprintf("v-%d", n%100)
					mu.Unlock()
					if err := db.PutVolume(&volumes.Volume{ID: id, PluginID: "p"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// countCommits is a CommitObserver that counts the commits that succeeded
// and the writes they carried.
type countCommits struct {
	mu             sync.Mutex
	commits, write int
}

func (c *countCommits) ObserveCommit(writes int, _ time.Duration, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commits++
	c.write += writes
}

// A writer that takes the commit slot with others queued behind it waits
// for more while they keep coming, and commits them all at once: here
// until maxGroup are queued, long before its (long) window ends.
func TestBatchStreamGathers(t *testing.T) {
	obs := &countCommits{}
	db := openTest(t, statePath(t), Options{Commits: obs})
	db.bolt.NoSync = true
	b := &db.batcher
	b.window, b.minGap = time.Minute, time.Minute
	obs.mu.Lock()
	obs.commits, obs.write = 0, 0 // Open's own
	obs.mu.Unlock()

	// Hold the slot so that the first writers queue up behind it.
	b.slot <- struct{}{}
	var wg sync.WaitGroup
	errs := make(chan error, maxGroup)
	write := func(i int) {
		defer wg.Done()
		if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%02d", i), PluginID: "p"}); err != nil {
			errs <- err
		}
	}
	queued := func(n int) func() bool {
		return func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) >= n }
	}
	for i := range 2 {
		wg.Add(1)
		go write(i)
	}
	waitFor(t, "two queued writers", queued(2))
	<-b.slot
	waitFor(t, "a gathering leader", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.gathering })
	start := time.Now()
	for i := 2; i < maxGroup; i++ {
		wg.Add(1)
		go write(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the gather ran to its window (%v) instead of ending at %d writers", took, maxGroup)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.commits != 1 || obs.write != maxGroup {
		t.Fatalf("%d commits carried %d writes, want 1 carrying %d", obs.commits, obs.write, maxGroup)
	}
	vols, err := db.Volumes()
	if err != nil || len(vols) != maxGroup {
		t.Fatalf("%d volumes stored (%v), want %d", len(vols), err, maxGroup)
	}
}

// waitFor polls cond, which reads state another goroutine changes, until
// it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// A gathering leader stops waiting when writers stop coming (one commit's
// time, at least minGap, after the last), long before its window ends.
func TestBatchGatherEndsWhenWritersStop(t *testing.T) {
	obs := &countCommits{}
	db := openTest(t, statePath(t), Options{Commits: obs})
	db.bolt.NoSync = true
	b := &db.batcher
	b.window, b.minGap = time.Minute, 50*time.Millisecond
	b.slot <- struct{}{}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%d", i), PluginID: "p"}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "two queued writers", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == 2 })
	start := time.Now()
	<-b.slot
	wg.Wait()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the leader waited %v for writers that had stopped coming", took)
	}
}

// A leader that finds maxGroup writes already queued commits them without
// waiting for one more.
func TestBatchFullGroupDoesNotWait(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	db.bolt.NoSync = true
	b := &db.batcher
	b.window, b.minGap = time.Minute, time.Minute
	b.slot <- struct{}{}
	var wg sync.WaitGroup
	for i := range maxGroup {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := db.PutVolume(&volumes.Volume{ID: fmt.Sprintf("v-%02d", i), PluginID: "p"}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "a full group queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == maxGroup })
	start := time.Now()
	<-b.slot
	wg.Wait()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a full group waited %v for one more writer", took)
	}
}
