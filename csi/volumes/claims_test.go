package volumes

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// fakeAllocs is an AllocSource whose ended allocations the test names.
type fakeAllocs struct {
	mu    sync.Mutex
	ended map[string]bool
}

func (f *fakeAllocs) AllocEnded(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended[id], nil
}

func (f *fakeAllocs) end(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended[id] = true
}

// addNode registers the plugin's node service too, with the staging
// directory a supervisor would give it, and waits for its fingerprint.
func (h *volHarness) addNode(t *testing.T, name, socket, stagingDir string) {
	t.Helper()
	info := csitest.Info(dynamic.PluginTypeCSINode, name, "alloc-"+name, socket)
	info.Options = map[string]string{plugins.OptionStagePublishBaseDir: stagingDir}
	if err := h.reg.Register(info); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p, ok := h.m.Plugin(name); ok && p.Node() != nil && p.Node().Healthy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node of %s never healthy", name)
		}
		select {
		case <-h.health:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isMountpoint(t *testing.T, path string) bool {
	t.Helper()
	ok, err := mountinfo.IsMountPoint(path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A claim is mounted in recorded steps, refuses a second writer, and is
// released on its own once its allocation is gone, also by a manager that
// starts after the allocation ended (a restarted agent).
func TestClaimReleasedWhenAllocGone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mockcsi mounts need root")
	}
	t.Parallel()
	p := startMockPlugin(t)
	h := newVolHarness(t)
	allocs := &fakeAllocs{ended: map[string]bool{}}
	h.allocs = allocs
	h.addPlugin(t, "mock", p.socket)
	base := t.TempDir()
	t.Cleanup(func() { // whatever a failure left mounted
		if err := mountinfo.DetachUnder(base); err != nil {
			t.Error(err)
		}
	})
	h.addNode(t, "mock", p.socket, base)
	store := newMemVolumeStore()
	vm, _, stop := h.startVM(t, store)

	if _, err := vm.Create(volSpec("cv", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	settle(t, vm, "cv")
	req := ClaimRequest{VolumeID: "cv", AllocID: "a1", JobID: "j", TaskGroup: "g",
		AccessMode: "single-node-writer", AttachmentMode: "file-system"}
	if err := vm.Claim([]ClaimRequest{req}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := vm.WaitMounted(ctx, "cv", "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !isMountpoint(t, c.TargetPath) || !strings.HasPrefix(c.TargetPath, base+"/per-alloc/a1/cv/") {
		t.Fatalf("claim published at %q, not a mount under %s", c.TargetPath, base)
	}

	second := req
	second.AllocID = "a2"
	var ce *ClaimError
	if err := vm.CheckClaims([]ClaimRequest{second}, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), "a1") {
		t.Fatalf("a second writer: %v; want a ClaimError naming a1", err)
	}
	if err := vm.CheckClaims([]ClaimRequest{second}, func(id string) bool { return id == "a1" }); err != nil {
		t.Fatalf("a writer replacing a1: %v", err)
	}

	// The agent goes; meanwhile the allocation ends; a new manager over
	// the same records releases the claim without being asked.
	stop()
	allocs.end("a1")
	vm2, log2, _ := h.startVM(t, store)
	log2.waitFor(t, "claim released", func(ch volChange) bool { return ch.V.ID == "cv" && len(ch.V.Claims) == 0 })
	if isMountpoint(t, c.TargetPath) || isMountpoint(t, c.StagingPath) {
		t.Fatal("a mount outlived the released claim")
	}
	calls := p.calls(t)
	for _, rpc := range []string{"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"} {
		if calls.Calls[rpc] != 1 {
			t.Errorf("%s called %d times, want once: %v", rpc, calls.Calls[rpc], calls.Calls)
		}
	}
	if _, err := vm2.Delete("cv"); err != nil {
		t.Fatalf("delete after the release: %v", err)
	}
}

// Issue 26 §9: a plugin that hangs NodeStageVolume held its volume's claim
// as "release queued" for the whole RPC timeout (a minute) after the
// allocation failed. A release cancels the claim's call in flight, says
// which call it was, and unwinds at once, the stage the plugin did
// included.
func TestReleaseCancelsAHungMountStep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mockcsi mounts need root")
	}
	t.Parallel()
	// The stage is done, then its answer hangs (MOCKCSI_DELAY answers
	// late after the work).
	p := startMockPlugin(t, "MOCKCSI_DELAY=NodeStageVolume:1h")
	h := newVolHarness(t)
	h.rpcTimeout = time.Minute
	h.allocs = &fakeAllocs{ended: map[string]bool{}}
	h.addPlugin(t, "mock", p.socket)
	base := t.TempDir()
	t.Cleanup(func() {
		if err := mountinfo.DetachUnder(base); err != nil {
			t.Error(err)
		}
	})
	h.addNode(t, "mock", p.socket, base)
	vm, log, _ := h.startVM(t, newMemVolumeStore())
	if _, err := vm.Create(volSpec("hv", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	settle(t, vm, "hv")
	if err := vm.Claim([]ClaimRequest{{VolumeID: "hv", AllocID: "a1", JobID: "j", TaskGroup: "g",
		AccessMode: "single-node-writer", AttachmentMode: "file-system"}}); err != nil {
		t.Fatal(err)
	}
	// Controller-published: the next step, NodeStage, is the one that
	// hangs. Wait until the plugin has it.
	log.waitFor(t, "controller-published", func(ch volChange) bool {
		c := ch.V.claim("a1")
		return c != nil && c.State == ClaimControllerPublished
	})
	deadline := time.Now().Add(10 * time.Second)
	for !inflightFor(vm, "hv", "a1") {
		if time.Now().After(deadline) {
			t.Fatal("NodeStageVolume never in flight")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start, mark := time.Now(), log.mark()
	if err := vm.Release("a1", []string{"hv"}); err != nil {
		t.Fatal(err)
	}
	desc := log.waitFrom(t, mark, "release queued, naming the call", func(ch volChange) bool {
		c := ch.V.claim("a1")
		return c != nil && c.Desired == ClaimReleased
	}).V.claim("a1").StateDescription
	if !strings.Contains(desc, "NodeStageVolume in flight for") || !strings.Contains(desc, "cancelled") {
		t.Errorf("release description %q does not name the call in flight", desc)
	}
	log.waitFrom(t, mark, "claim released", func(ch volChange) bool { v := ch.V; return v.ID == "hv" && len(v.Claims) == 0 })
	t.Logf("released %s after the request (the RPC timeout is a minute): %s", time.Since(start).Round(time.Millisecond), desc)
	// Whatever the cancelled stage did is undone: nothing stays mounted.
	if m, err := mountinfo.Under("/proc/self/mountinfo", base); err != nil || len(m) != 0 {
		t.Errorf("mounts left after the release: %v %v", m, err)
	}
}

// inflightFor reports whether the claim has a call in flight.
func inflightFor(vm *VolumeManager, volumeID, allocID string) bool {
	vm.inflight.mu.Lock()
	defer vm.inflight.mu.Unlock()
	return vm.inflight.calls[claimKey{volumeID, allocID}] != nil
}

// stagedTx is a VolumeTx whose writes reach the store only at commit, as
// a bbolt transaction's do.
type stagedTx struct {
	store  *memVolumeStore
	staged map[string]*Volume
}

func (tx *stagedTx) Volume(id string) (*Volume, error) {
	if v, ok := tx.staged[id]; ok {
		return v.Clone(), nil
	}
	return tx.store.Volume(id)
}

func (tx *stagedTx) PutVolume(v *Volume) error {
	tx.staged[v.ID] = v.Clone()
	return nil
}

func (tx *stagedTx) commit(t *testing.T) {
	for _, v := range tx.staged {
		if err := tx.store.PutVolume(v); err != nil {
			t.Fatal(err)
		}
	}
}

// Claims made in a caller's transaction are announced and worked on only
// when it commits; a rolled-back one leaves no trace; a volume that is
// gone is left out rather than failing the transaction; and the record
// stays locked until End, so a request waits for the commit and sees the
// claim.
func TestClaimsTxCommitsWithCallersTransaction(t *testing.T) {
	t.Parallel()
	h := newVolHarness(t)
	store := newMemVolumeStore()
	vm, log, _ := h.startVM(t, store)
	if _, err := vm.Create(volSpec("tv", "absent", mib)); err != nil {
		t.Fatal(err)
	}
	// Once the volume's own pass has recorded what it waits for, nothing
	// else takes the record's lock: the lock count below is the test's.
	log.waitFor(t, "volume waiting for its plugin", func(ch volChange) bool {
		return ch.V.ID == "tv" && strings.HasPrefix(ch.V.StateDescription, "waiting")
	})
	req := func(vol, alloc string) ClaimRequest {
		return ClaimRequest{VolumeID: vol, AllocID: alloc, JobID: "j", TaskGroup: "g",
			AccessMode: "single-node-writer", AttachmentMode: "file-system"}
	}

	ct := vm.BeginClaims([]string{"tv", "gone"})
	tx := &stagedTx{store: store, staged: map[string]*Volume{}}
	if err := ct.Claim(tx, []ClaimRequest{req("tv", "rolled-back"), req("gone", "rolled-back")}); err != nil {
		t.Fatal(err)
	}
	ct.End(false)
	if v, _ := store.Volume("tv"); len(v.Claims) != 0 {
		t.Fatalf("a rolled-back claim is in the store: %+v", v.Claims)
	}

	ct = vm.BeginClaims([]string{"gone", "tv", "tv"})
	tx = &stagedTx{store: store, staged: map[string]*Volume{}}
	if err := ct.Claim(tx, []ClaimRequest{req("tv", "a1"), req("gone", "a1"), req("tv", "a1")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tx.staged["gone"]; ok {
		t.Fatal("a claim on a volume that does not exist was written")
	}
	deleted := make(chan error, 1)
	go func() {
		_, err := vm.Delete("tv")
		deleted <- err
	}()
	// The delete must wait for the record's lock, which BeginClaims holds
	// until End: it is not answered before the commit.
	for deadline := time.Now().Add(10 * time.Second); vm.recMu.refs("tv") < 2; time.Sleep(time.Millisecond) {
		select {
		case err := <-deleted:
			t.Fatalf("delete answered while the claim's transaction was open: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the delete never waited for the record's lock")
		}
	}
	tx.commit(t)
	ct.End(true)
	if err := <-deleted; err == nil || !strings.Contains(err.Error(), "in use by allocation a1") {
		t.Fatalf("delete during the claim's transaction: %v; want it refused, naming a1", err)
	}
	v, err := store.Volume("tv")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Claims) != 1 || v.Claims[0].AllocID != "a1" || v.Claims[0].State != ClaimPending {
		t.Fatalf("claims after the commit: %+v; want a1 pending", v.Claims)
	}
	log.waitFor(t, "claim announced", func(ch volChange) bool { return ch.V.claim("a1") != nil })
	for _, ch := range log.of("tv") {
		if ch.V.claim("rolled-back") != nil {
			t.Fatal("a rolled-back claim was announced")
		}
	}
	// Queued: the pass records what the claim waits for.
	log.waitFor(t, "claim worked on", func(ch volChange) bool {
		c := ch.V.claim("a1")
		return c != nil && strings.HasPrefix(c.StateDescription, "waiting")
	})
}

// A claim recorded while the volume's own step is in flight (here a slow
// CreateVolume) survives that step's outcome: the pass read the record
// before the claim, and must not write that older copy back.
func TestClaimDuringVolumeStepSurvives(t *testing.T) {
	t.Parallel()
	p, vm, log := mockVM(t, "MOCKCSI_DELAY=CreateVolume:1s")
	if _, err := vm.Create(volSpec("sv", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	// mockcsi commits the volume before the delayed answer: once it lists
	// it, the pass is waiting for that answer.
	for deadline := time.Now().Add(10 * time.Second); p.volumes(t)["sv"] == nil; {
		if time.Now().After(deadline) {
			t.Fatal("mockcsi never created the volume")
		}
		time.Sleep(5 * time.Millisecond) // another process's state: nothing to wait on
	}
	req := ClaimRequest{VolumeID: "sv", AllocID: "a1", JobID: "j", TaskGroup: "g",
		AccessMode: "single-node-writer", AttachmentMode: "file-system"}
	if err := vm.Claim([]ClaimRequest{req}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "created", func(ch volChange) bool { return ch.V.ExternalID != "" })
	v := settle(t, vm, "sv")
	if v.State != StateReady || v.claim("a1") == nil {
		t.Fatalf("after the create: state %s, claims %+v; want ready with a1's claim", v.State, v.Claims)
	}
}
