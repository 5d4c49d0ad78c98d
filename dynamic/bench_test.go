package dynamic

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFanout publishes one event at a time to 1,000 subscribers, one of
// which never reads until the end, and reports the delivery latency (publish
// to receive) seen by the 999 others. Each op is one event delivered to all
// of them. Every subscriber checks that it got every event, in order.
func BenchmarkFanout(b *testing.B) {
	const subs = 1000
	const typ = PluginTypeCSINode
	r := newRegistry(b, nil)
	info := node("p", "a1")
	if err := r.Register(info); err != nil {
		b.Fatal(err)
	}

	stalled := r.Subscribe(b.Context(), typ)
	pubTimes := make([]time.Time, b.N)
	versions := make([]string, b.N)
	for i := range versions {
		versions[i] = strconv.Itoa(i)
	}
	var received atomic.Int64
	allGot := make(chan struct{})
	lat := make([][]time.Duration, subs-1)
	errs := make(chan error, subs)
	var wg sync.WaitGroup
	for s := range subs - 1 {
		ch := r.Subscribe(b.Context(), typ)
		lat[s] = make([]time.Duration, 0, b.N)
		wg.Go(func() {
			for i := range b.N {
				ev, ok := <-ch
				if !ok {
					errs <- fmt.Errorf("subscriber %d: closed after %d events", s, i)
					return
				}
				lat[s] = append(lat[s], time.Since(pubTimes[i]))
				if ev.Info.Version != versions[i] {
					errs <- fmt.Errorf("subscriber %d: event %d carries version %s", s, i, ev.Info.Version)
				}
				if received.Add(1) == subs-1 {
					allGot <- struct{}{}
				}
			}
		})
	}

	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := range b.N {
		received.Store(0)
		info.Version = versions[i]
		pubTimes[i] = time.Now()
		if err := r.Register(info); err != nil {
			b.Fatal(err)
		}
		select {
		case <-allGot:
		case err := <-errs:
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu0, b.N)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	// The stalled subscriber held up nobody and still has everything.
	for i := range b.N {
		ev := <-stalled
		if ev.Type != EventUpdated || ev.Info.Version != versions[i] {
			b.Fatalf("stalled subscriber: event %d is %s version %s", i, ev.Type, ev.Info.Version)
		}
	}

	all := make([]time.Duration, 0, (subs-1)*b.N)
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)*50/100]), "p50-ns")
	b.ReportMetric(float64(all[len(all)*99/100]), "p99-ns")
	b.ReportMetric(float64(all[len(all)-1]), "max-ns")
}

// BenchmarkRegisterDeregister registers a new allocation of a plugin (which
// takes over) and deregisters it again (the previous one is reactivated),
// with n allocations already registered, ten per plugin name. The cost must
// not depend on n.
func BenchmarkRegisterDeregister(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("allocs=%d", n), func(b *testing.B) {
			r := newRegistry(b, NewMemStore())
			for i := range n {
				if err := r.Register(node(fmt.Sprint("p", i/10), fmt.Sprint("a", i))); err != nil {
					b.Fatal(err)
				}
			}
			info := node("p0", "bench")
			cpu0, ops := cpuTime(b), 0
			for b.Loop() {
				ops++
				if err := r.Register(info); err != nil {
					b.Fatal(err)
				}
				if err := r.Deregister(info.Type, info.Name, info.AllocID); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, ops)
			if got := activeAlloc(r, PluginTypeCSINode, "p0"); got != "a9" {
				b.Fatalf("active %q after the loop, want a9", got)
			}
		})
	}
}

// BenchmarkRegisterDeregisterWatched is BenchmarkRegisterDeregister with
// 1,000 subscribers reading every event of the type, one of them stalled:
// it shows what the fan-out adds to the writer (ns/op is the writer's wall
// time, cpu-ns/op includes the subscribers' share of the CPU). Each op is
// three events. Every reader checks that it saw each event, in order.
func BenchmarkRegisterDeregisterWatched(b *testing.B) {
	const subs, allocs = 1000, 100
	const typ = PluginTypeCSINode
	r := newRegistry(b, NewMemStore())
	for i := range allocs {
		if err := r.Register(node(fmt.Sprint("p", i/10), fmt.Sprint("a", i))); err != nil {
			b.Fatal(err)
		}
	}
	_ = r.Subscribe(b.Context(), typ) // stalled: never read
	info := node("p0", "bench")
	end := node("zz-end", "end")
	errs := make(chan error, subs)
	var wg sync.WaitGroup
	for s := range subs - 1 {
		ch := r.Subscribe(b.Context(), typ)
		wg.Go(func() {
			want := EventRegistered
			for ev := range ch {
				if ev.Info.AllocID == end.AllocID {
					if want != EventRegistered {
						errs <- fmt.Errorf("subscriber %d: ended waiting for %s", s, want)
					}
					return
				}
				if ev.Type != want {
					errs <- fmt.Errorf("subscriber %d: got %s, want %s", s, ev.Type, want)
					return
				}
				// Each op: the bench allocation registers and takes over,
				// deregisters, and a9 is activated again.
				switch want {
				case EventRegistered:
					want = EventDeregistered
				case EventDeregistered:
					want = EventActivated
				default:
					want = EventRegistered
				}
			}
			errs <- fmt.Errorf("subscriber %d: closed early", s)
		})
	}
	cpu0, ops := cpuTime(b), 0
	for b.Loop() {
		ops++
		if err := r.Register(info); err != nil {
			b.Fatal(err)
		}
		if err := r.Deregister(info.Type, info.Name, info.AllocID); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Register(end); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	reportCPU(b, cpu0, ops)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkRestore measures New restoring 100,000 allocations (10 per
// plugin name), i.e. the registry's share of an agent restart: "memstore"
// includes MemStore copying every record out, "registry" hands New the same
// fresh records each time and so measures the registry alone.
func BenchmarkRestore(b *testing.B) {
	const n = 100_000
	store := NewMemStore()
	for i := range n {
		p := node(fmt.Sprint("p", i/10), fmt.Sprint("a", i))
		p.Seq = uint64(i + 1)
		if err := store.PutPlugins(p); err != nil {
			b.Fatal(err)
		}
	}
	records, _ := store.Plugins()
	for _, bc := range []struct {
		name  string
		store Store
	}{{"memstore", store}, {"registry", sliceStore(records)}} {
		b.Run(bc.name, func(b *testing.B) {
			var r *Registry
			cpu0, ops := cpuTime(b), 0
			for b.Loop() {
				ops++
				var err error
				r, err = New(Config{Store: bc.store})
				if err != nil {
					b.Fatal(err)
				}
				r.Shutdown()
			}
			reportCPU(b, cpu0, ops)
			if got := len(r.ListAllocs(PluginTypeCSINode)); got != n {
				b.Fatalf("restored %d allocations, want %d", got, n)
			}
			if got := activeAlloc(r, PluginTypeCSINode, "p7"); got != "a79" {
				b.Fatalf("p7 active %q, want a79", got)
			}
		})
	}
}

// sliceStore returns the same records on every Plugins call. The registry
// never modifies restored records, so reusing them across iterations is
// sound here.
type sliceStore []*PluginInfo

func (s sliceStore) PutPlugins(...*PluginInfo) error           { return nil }
func (s sliceStore) DeletePlugin(string, string, string) error { return nil }
func (s sliceStore) Plugins() ([]*PluginInfo, error)           { return s, nil }

// reportCPU reports the CPU time used since start, per op.
func reportCPU(b *testing.B, start time.Duration, ops int) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(ops), "cpu-ns/op")
}
