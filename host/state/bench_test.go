package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
	"go.etcd.io/bbolt"
)

// uuidish returns a random-looking allocation ID, so keys land all over the
// B+tree as real allocation UUIDs do, not appended at its right edge.
func uuidish(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff)
}

func benchPlugin(r *rand.Rand, i int) *dynamic.PluginInfo {
	alloc := uuidish(r)
	return &dynamic.PluginInfo{
		Type:           dynamic.PluginTypeCSINode,
		Name:           fmt.Sprintf("plugin-%d", i%100),
		Version:        "1.2.3",
		AllocID:        alloc,
		ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: "/var/lib/pluginhost/csi/plugins/" + alloc + "/csi.sock"},
		Options:        map[string]string{"MountDir": "/csi", "StagePublishBaseDir": "/local/csi"},
		Seq:            uint64(i + 1),
		RegisteredAt:   time.Now(),
	}
}

// prepopulate writes n plugin records in one transaction: what n Register
// calls would leave, without n fsyncs. Keys go in sorted, because bbolt only
// splits nodes at commit: random inserts into one transaction all land in
// one ever-growing in-memory node, which is quadratic.
func prepopulate(b *testing.B, path string, n int, r *rand.Rand) {
	b.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type kv struct {
		k []byte
		p *dynamic.PluginInfo
	}
	recs := make([]kv, n)
	for i := range recs {
		p := benchPlugin(r, i)
		recs[i] = kv{pluginKey(p.Type, p.Name, p.AllocID), p}
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	if err := db.bolt.Update(func(tx *bbolt.Tx) error {
		bk := tx.Bucket([]byte(bucketPlugins))
		for _, rec := range recs {
			if err := putJSON(bk, rec.k, rec.p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRegistryRegisterDeregister measures one Register plus one
// Deregister (two durable commits) through dynamic.Registry backed by the
// bbolt store, at growing numbers of registered allocations. The goal is a
// per-op cost at 100,000 within 1.2x of the cost at 100.
//
// The fsync runs are what the agent pays; on a shared disk they are noisy.
// The nosync runs skip fdatasync (never done outside this benchmark) to show
// the CPU part alone, which is where tree depth shows.
func BenchmarkRegistryRegisterDeregister(b *testing.B) {
	for _, mode := range []string{"fsync", "nosync"} {
		for _, n := range []int{100, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/allocs=%d", mode, n), func(b *testing.B) {
				benchRegisterDeregister(b, n, mode == "nosync")
			})
		}
	}
}

func benchRegisterDeregister(b *testing.B, n int, noSync bool) {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	path := filepath.Join(b.TempDir(), "state.db")
	prepopulate(b, path, n, r)
	db := openTest(b, path, Options{})
	db.bolt.NoSync = noSync
	reg, err := dynamic.New(dynamic.Config{Store: db})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Shutdown)
	if got := len(reg.ListAllocs(dynamic.PluginTypeCSINode)); got != n {
		b.Fatalf("restored %d allocations, want %d", got, n)
	}
	i := n
	for b.Loop() {
		p := benchPlugin(r, i)
		p.Seq, p.RegisteredAt = 0, time.Time{}
		if err := reg.Register(p); err != nil {
			b.Fatal(err)
		}
		if err := reg.Deregister(p.Type, p.Name, p.AllocID); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	if got := len(reg.ListAllocs(dynamic.PluginTypeCSINode)); got != n {
		b.Fatalf("%d allocations after the run, want %d", got, n)
	}
}

// BenchmarkOpenRestore is the agent's start-up cost: verify and open the
// file, then restore a registry from it.
func BenchmarkOpenRestore(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("allocs=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.db")
			prepopulate(b, path, n, rand.New(rand.NewPCG(uint64(n), 7)))
			for b.Loop() {
				db, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				reg, err := dynamic.New(dynamic.Config{Store: db})
				if err != nil {
					b.Fatal(err)
				}
				reg.Shutdown()
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendTaskEvent shows that appending costs the same whatever the
// number of events a task has had: only the last maxTaskEvents are kept and
// trimming removes one key per append.
func BenchmarkAppendTaskEvent(b *testing.B) {
	for _, history := range []uint64{100, 1_000_000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			db := openTest(b, filepath.Join(b.TempDir(), "state.db"), Options{})
			if err := db.PutAlloc(testAlloc("a")); err != nil {
				b.Fatal(err)
			}
			// Fast-forward: the last maxTaskEvents of a long history.
			if err := db.Update(func(tx *Tx) error {
				return tx.updateTask("seed", "a", "t", seedEvents(history))
			}); err != nil {
				b.Fatal(err)
			}
			ev := &TaskEvent{Type: "Restarting", Time: time.Now(), Message: "exit code 1", Details: map[string]string{"restart_in": "15s"}}
			for b.Loop() {
				if err := db.AppendTaskEvent("a", "t", ev); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if evs, err := db.taskEvents("a", "t"); err != nil || len(evs) != maxTaskEvents {
				b.Fatalf("%d events after the run (%v), want %d", len(evs), err, maxTaskEvents)
			}
		})
	}
}

// seedEvents stores the last maxTaskEvents of a history of n events.
func seedEvents(history uint64) func(tb *bbolt.Bucket) error {
	return func(tb *bbolt.Bucket) error {
		eb, err := tb.CreateBucket([]byte(bucketEvents))
		if err != nil {
			return err
		}
		for seq := history - maxTaskEvents + 1; seq <= history; seq++ {
			if err := putJSON(eb, seqKey(seq), &TaskEvent{Type: "Tick"}); err != nil {
				return err
			}
		}
		return eb.SetSequence(history)
	}
}

// BenchmarkTaskStartWrites compares a task launch's records written one
// commit each (as the runner once did) with the same records in one Update.
func BenchmarkTaskStartWrites(b *testing.B) {
	h := &TaskHandle{Driver: "go_plugin", Pid: 4242, StartTime: 99, Reattach: &driver.ReattachRecord{Protocol: "grpc", Network: "unix", Addr: "/run/x/plugin1", Pid: 4242}}
	st := &TaskState{State: TaskStateRunning, StartedAt: time.Now()}
	ev := func(typ string) *TaskEvent {
		return &TaskEvent{Type: typ, Time: time.Now(), Message: "Task event " + typ}
	}
	setup := func(b *testing.B) (*DB, *Alloc) {
		db := openTest(b, filepath.Join(b.TempDir(), "state.db"), Options{})
		a := testAlloc("a")
		if err := db.PutAlloc(a); err != nil {
			b.Fatal(err)
		}
		return db, a
	}
	b.Run("separate", func(b *testing.B) {
		db, a := setup(b)
		for b.Loop() {
			for _, err := range []error{
				db.AppendTaskEvent("a", "t", ev("Task Setup")),
				db.PutTaskHandle("a", "t", h),
				db.PutTaskState("a", "t", st),
				db.PutAlloc(a),
				db.AppendTaskEvent("a", "t", ev("Started")),
			} {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("one_update", func(b *testing.B) {
		db, a := setup(b)
		for b.Loop() {
			err := db.Update(func(tx *Tx) error {
				if err := tx.AppendTaskEvent("a", "t", ev("Task Setup")); err != nil {
					return err
				}
				if err := tx.PutTaskHandle("a", "t", h); err != nil {
					return err
				}
				if err := tx.PutTaskState("a", "t", st); err != nil {
					return err
				}
				if err := tx.PutAlloc(a); err != nil {
					return err
				}
				return tx.AppendTaskEvent("a", "t", ev("Started"))
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConcurrentWriters has 100 writers appending task events at once,
// as 100 task runners do when a restarted agent re-adopts their tasks;
// commits/op is the transactions a write cost on average. (A group commit
// that shared transactions among queued writers made this 6x faster, but
// end to end it did not speed up agent restarts on our test machine and
// added 20-60 KiB of agent RSS per re-adopted task, so it was taken out;
// see the issue 5 closing note.)
func BenchmarkConcurrentWriters(b *testing.B) {
	db := openTest(b, filepath.Join(b.TempDir(), "state.db"), Options{})
	const writers = 100
	for i := range writers {
		if err := db.PutAlloc(testAlloc(fmt.Sprintf("a%03d", i))); err != nil {
			b.Fatal(err)
		}
	}
	ev := &TaskEvent{Type: "Reattached", Time: time.Now(), Message: "Task re-adopted after agent restart (pid 4242)"}
	var txs sync.Map
	b.SetParallelism(writers / runtime.GOMAXPROCS(0))
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("a%03d", next.Add(1)%writers)
		for pb.Next() {
			err := db.Update(func(tx *Tx) error {
				txs.Store(tx.tx, true)
				return tx.AppendTaskEvent(id, "t", ev)
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	n := 0
	txs.Range(func(any, any) bool { n++; return true })
	b.ReportMetric(float64(n)/float64(b.N), "commits/op")
}
