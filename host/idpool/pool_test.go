package idpool

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

func none(uint32) bool { return false }

func TestAcquireHoldRelease(t *testing.T) {
	p, err := newPool(100, 104, func(id uint32) bool { return id == 102 })
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Acquire("a", 2)
	if err != nil || !slices.Equal(a, []uint32{100, 101}) {
		t.Fatalf("a got %v (%v)", a, err)
	}
	// 102 is a host user's: skipped.
	b, err := p.Acquire("b", 2)
	if err != nil || !slices.Equal(b, []uint32{103, 104}) {
		t.Fatalf("b got %v (%v)", b, err)
	}
	if _, err := p.Acquire("c", 1); !errors.Is(err, ErrExhausted) {
		t.Fatalf("full pool: %v", err)
	}
	if p.Held() != 4 {
		t.Fatalf("held %d", p.Held())
	}
	p.Release("a")
	c, err := p.Acquire("c", 2)
	if err != nil || !slices.Equal(c, []uint32{100, 101}) {
		t.Fatalf("c got %v (%v)", c, err)
	}
	// A failed Acquire takes nothing.
	p.Release("b")
	if _, err := p.Acquire("d", 3); !errors.Is(err, ErrExhausted) {
		t.Fatal(err)
	}
	if p.Held() != 2 {
		t.Fatalf("a failed acquire kept ids: held %d", p.Held())
	}
}

// A restarted agent holds what its allocations recorded before it hands
// out anything, and never gives one id to two allocations.
func TestHold(t *testing.T) {
	p, _ := newPool(100, 199, none)
	if err := p.Hold("old", 100, 101, 5000); err != nil {
		t.Fatal(err)
	}
	if err := p.Hold("other", 101); err == nil {
		t.Fatal("an id held twice was accepted")
	}
	if err := p.Hold("old", 100); err != nil {
		t.Fatalf("holding one's own id again: %v", err)
	}
	got, _ := p.Acquire("new", 1)
	if got[0] == 100 || got[0] == 101 {
		t.Fatalf("handed out a held id %d", got[0])
	}
	p.Release("old")
	if p.Held() != 1 {
		t.Fatalf("held %d after release", p.Held())
	}
}

func TestConcurrentAcquireNeverShares(t *testing.T) {
	p, _ := newPool(1000, 1999, none)
	var mu sync.Mutex
	seen := map[uint32]bool{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := p.Acquire(string(rune('A'+i)), 20)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	if len(seen) != 1000 {
		t.Fatalf("%d distinct ids", len(seen))
	}
}

func TestBadRange(t *testing.T) {
	for _, r := range [][2]uint32{{0, 10}, {10, 9}} {
		if _, err := New(r[0], r[1]); err == nil {
			t.Errorf("range %v accepted", r)
		}
	}
}

// The real database: root's id is known, an id far up is not.
func TestInUserDB(t *testing.T) {
	if !inUserDB(0) {
		t.Fatal("uid 0 not found in the user database")
	}
	if inUserDB(3999999999) {
		t.Fatal("uid 3999999999 found in the user database")
	}
}
