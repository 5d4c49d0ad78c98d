package dynamic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestConcurrentChurnMatchesModel: many goroutines register, update and
// deregister allocations of a few plugins while subscribers come and go. A
// subscriber present from the start must see a history that is valid step
// by step (checked against a model) and that ends in exactly the registry's
// final state.
func TestConcurrentChurnMatchesModel(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	const typ, workers, ops, names = PluginTypeCSINode, 8, 300, 3
	full := r.Subscribe(t.Context(), typ)

	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	for w := range workers {
		workerDone := make(chan struct{})
		wg.Go(func() {
			defer close(workerDone)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var mine []*PluginInfo
			for i := range ops {
				switch {
				case len(mine) > 0 && rng.IntN(3) == 0:
					k := rng.IntN(len(mine))
					p := mine[k]
					mine = slices.Delete(mine, k, k+1)
					if err := r.Deregister(typ, p.Name, p.AllocID); err != nil {
						errs <- err
						return
					}
				case len(mine) > 0 && rng.IntN(4) == 0:
					p := mine[rng.IntN(len(mine))].Copy()
					p.Version = fmt.Sprint("v", i)
					if err := r.Register(p); err != nil {
						errs <- err
						return
					}
				default:
					p := node(fmt.Sprint("p", rng.IntN(names)), fmt.Sprintf("w%d-%d", w, i))
					mine = append(mine, p)
					if err := r.Register(p); err != nil {
						errs <- err
						return
					}
				}
			}
		})
		// Subscribers that join late and leave early, never reading all.
		wg.Go(func() {
			for range 20 {
				ctx, cancel := context.WithCancel(t.Context())
				ch := r.Subscribe(ctx, typ)
				select {
				case <-ch:
				case <-workerDone:
				}
				cancel()
				for range ch {
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustRegister(t, r, pinfo(typ, "zz-end", "end"))

	// model: name → alloc IDs in registration order; the last is active.
	model := map[string][]string{}
	// mustActivate is the allocation the next event must activate, set when
	// the active allocation was deregistered and others remain.
	var mustActivate string
	for {
		ev := next(t, full)
		name, alloc := ev.Info.Name, ev.Info.AllocID
		if name == "zz-end" {
			break
		}
		list := model[name]
		idx := slices.Index(list, alloc)
		expected := mustActivate
		mustActivate = ""
		if expected != "" && (ev.Type != EventActivated || alloc != expected) {
			t.Fatalf("got %s, want activation of %s", describe(ev), expected)
		}
		switch ev.Type {
		case EventRegistered:
			if idx >= 0 || !ev.Active {
				t.Fatalf("bad %s: known=%v", describe(ev), idx >= 0)
			}
			model[name] = append(list, alloc)
		case EventUpdated:
			if idx < 0 || ev.Active != (idx == len(list)-1) {
				t.Fatalf("bad %s: index %d of %d", describe(ev), idx, len(list))
			}
		case EventDeregistered:
			if idx < 0 || ev.Active {
				t.Fatalf("bad %s: known=%v", describe(ev), idx >= 0)
			}
			if idx == len(list)-1 && len(list) > 1 {
				mustActivate = list[idx-1]
			}
			model[name] = slices.Delete(list, idx, idx+1)
		case EventActivated:
			if expected == "" || !ev.Active || idx != len(list)-1 {
				t.Fatalf("unexpected %s", describe(ev))
			}
		}
	}
	if mustActivate != "" {
		t.Fatalf("history ended before %s was activated", mustActivate)
	}

	for n := range names {
		name := fmt.Sprint("p", n)
		var got []string
		for _, p := range r.ListAllocs(typ) {
			if p.Name == name {
				got = append(got, p.AllocID)
			}
		}
		if !slices.Equal(got, model[name]) {
			t.Fatalf("%s: registry %v, replayed events %v", name, got, model[name])
		}
	}
	r.Shutdown()
	done()
}

// TestShutdownRaces: Shutdown, from several goroutines, while others
// register, deregister, subscribe and wait. Every call either succeeds or
// fails with ErrShutdown, every subscription ends, no goroutine survives.
func TestShutdownRaces(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	const typ = PluginTypeCSINode
	started := make(chan struct{}, 64)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				alloc := fmt.Sprintf("w%d-%d", w, i)
				err := r.Register(node(fmt.Sprint("p", i%2), alloc))
				if err == nil {
					err = r.Deregister(typ, fmt.Sprint("p", i%2), alloc)
				}
				if i == 10 {
					started <- struct{}{}
				}
				if errors.Is(err, ErrShutdown) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for {
				ch := r.Subscribe(t.Context(), typ)
				// Read a little, then drop it with events pending: only
				// Shutdown (or the closed channel) ends this loop.
				if _, ok := <-ch; !ok {
					return
				}
			}
		})
	}
	for range 6 {
		<-started
	}
	var shut sync.WaitGroup
	for range 3 {
		shut.Go(r.Shutdown)
	}
	shut.Wait()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	done()
}
