package idpool

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// agentDir is a data dir with a state file, as a live agent's has.
func agentDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "state.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func sharedPool(t *testing.T, leaseDir, dataDir string) *Pool {
	t.Helper()
	p, err := newPool(100, 109, func(uint32) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLeases(leaseDir, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	p.ShareWith(l)
	return p
}

// Two agents on one machine, both with the default range, never hand out
// the same id; a released id is free for the other; a restored allocation
// keeps its lease; the lease of an agent whose data dir is gone is taken
// over. Before leases both agents handed out 100, 101, ... to their tasks.
func TestLeasesKeepAgentsApart(t *testing.T) {
	leases := filepath.Join(t.TempDir(), "ids")
	aDir, bDir := agentDir(t), agentDir(t)
	a, b := sharedPool(t, leases, aDir), sharedPool(t, leases, bDir)
	got := map[uint32]string{}
	for i := range 4 {
		for name, p := range map[string]*Pool{"a": a, "b": b} {
			ids, err := p.Acquire(name+string(rune('0'+i)), 1)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := got[ids[0]]; dup {
				t.Fatalf("id %d handed out by %s and by %s", ids[0], other, name)
			}
			got[ids[0]] = name
		}
	}
	// The range is 10 ids; 8 are leased. Two are left, for either.
	if _, err := a.Acquire("big", 3); !errors.Is(err, ErrExhausted) {
		t.Fatalf("a took 3 of 2 free ids: %v", err)
	}
	b.Release("b0")
	ids, err := a.Acquire("after", 3)
	if err != nil {
		t.Fatalf("a after b released one: %v", err)
	}
	for _, id := range ids {
		if got[id] == "a" {
			t.Fatalf("a handed out its own id %d twice", id)
		}
	}

	// An agent restarted: a new pool on the same data dir holds what its
	// allocations hold, without a conflict.
	a2 := sharedPool(t, leases, aDir)
	if err := a2.Hold("after", ids...); err != nil {
		t.Fatalf("restoring a's allocation: %v", err)
	}
	// b restoring an id a leases (ids handed out before leases): kept,
	// and said.
	if err := b.Hold("old", ids[0]); !errors.Is(err, ErrShared) {
		t.Fatalf("b holding a's id: %v, want ErrShared", err)
	}

	// a's data dir is deleted: its leases are stale, and b takes them.
	if err := os.RemoveAll(aDir); err != nil {
		t.Fatal(err)
	}
	b.Release("old")
	var all []uint32
	for i := range 5 {
		ids, err := b.Acquire("late"+string(rune('0'+i)), 1)
		if err != nil {
			t.Fatalf("b after a's data dir went: %v", err)
		}
		all = append(all, ids...)
	}
	if !slices.ContainsFunc(all, func(id uint32) bool { return got[id] == "a" }) {
		t.Fatalf("b took none of the dead agent's ids: %v", all)
	}
}

// OpenLeases refuses a lease directory others may write: a lease there
// could be forged to starve the agent, or removed to make it share.
func TestLeasesRefuseAWritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ids")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLeases(dir, t.TempDir()); err == nil {
		t.Fatal("a world-writable lease directory was accepted")
	}
}

// Opening the leases removes those of agents whose data dir is gone, and
// leaves a live agent's.
func TestLeasesSweptAtOpen(t *testing.T) {
	leases := filepath.Join(t.TempDir(), "ids")
	live, dead := agentDir(t), agentDir(t)
	a, b := sharedPool(t, leases, live), sharedPool(t, leases, dead)
	if _, err := a.Acquire("x", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire("y", 3); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dead); err != nil {
		t.Fatal(err)
	}
	sharedPool(t, leases, agentDir(t))
	ents, err := os.ReadDir(leases)
	if err != nil || len(ents) != 2 {
		t.Fatalf("after the sweep %d leases (%v), want the live agent's 2", len(ents), err)
	}
}
