package volumes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
)

// The volume tests run VolumeManager against the real mockcsi binary,
// registered in a real dynamic.Registry and fingerprinted by a real
// Manager, over an in-memory VolumeStore. They wait on the manager's own
// signals (OnChange, record changes, health events); the only polling is of
// the plugin process's own state (calls.json, ListVolumes), which has no
// other way to say it changed.

// memVolumeStore is a VolumeStore in memory. Records are cloned in and
// out, as a real store serializes them; a second VolumeManager over the
// same store is an agent restart.
type memVolumeStore struct {
	mu   sync.Mutex
	vols map[string]*Volume
}

func newMemVolumeStore() *memVolumeStore { return &memVolumeStore{vols: map[string]*Volume{}} }

func (s *memVolumeStore) PutVolume(v *Volume) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vols[v.ID] = v.Clone()
	return nil
}

func (s *memVolumeStore) DeleteVolume(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vols, id)
	return nil
}

func (s *memVolumeStore) Volume(id string) (*Volume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vols[id]
	if !ok {
		return nil, fmt.Errorf("volume %q: %w", id, ErrVolumeNotFound)
	}
	return v.Clone(), nil
}

func (s *memVolumeStore) Volumes() ([]*Volume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Volume, 0, len(s.vols))
	for _, v := range s.vols {
		out = append(out, v.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// volChange is one OnChange call.
type volChange struct {
	V       *Volume
	Deleted bool
}

// changeLog records OnChange calls and lets a test wait for one.
type changeLog struct {
	mu     sync.Mutex
	recs   []volChange
	notify chan struct{} // closed and replaced at every record
}

func newChangeLog() *changeLog { return &changeLog{notify: make(chan struct{})} }

func (l *changeLog) add(v *Volume, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, volChange{v, deleted})
	close(l.notify)
	l.notify = make(chan struct{})
}

// of returns the records of one volume, in order.
func (l *changeLog) of(id string) []volChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []volChange
	for _, c := range l.recs {
		if c.V.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// waitFor returns the first record, past or future, that ok accepts.
func (l *changeLog) waitFor(t *testing.T, what string, ok func(volChange) bool) volChange {
	t.Helper()
	return l.waitFrom(t, 0, what, ok)
}

// mark is where waitFrom starts looking: changes recorded from now on.
func (l *changeLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// waitFrom is waitFor over the changes recorded since mark.
func (l *changeLog) waitFrom(t *testing.T, seen int, what string, ok func(volChange) bool) volChange {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		recs, notify := l.recs[seen:], l.notify
		seen = len(l.recs)
		l.mu.Unlock()
		for _, c := range recs {
			if ok(c) {
				return c
			}
		}
		select {
		case <-notify:
		case <-timeout:
			t.Fatalf("no volume change: %s", what)
		}
	}
}

// volHarness is a registry, a Manager following it, and VolumeManagers
// whose PluginChanged the Manager's OnHealthChange calls, as the agent's
// does.
type volHarness struct {
	reg    *dynamic.Registry
	m      *plugins.Manager
	vm     atomic.Pointer[VolumeManager]
	health chan plugins.HealthEvent
	// allocs, if set, is every VolumeManager's AllocSource.
	allocs AllocSource
	// rpcTimeout, if set, replaces the managers' 10 s RPCTimeout.
	rpcTimeout time.Duration
}

func newVolHarness(t testing.TB) *volHarness {
	t.Helper()
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	h := &volHarness{reg: reg, health: make(chan plugins.HealthEvent, 100)}
	h.m, err = plugins.NewManager(plugins.ManagerConfig{
		Registry:            reg,
		Logger:              hclog.NewNullLogger(),
		FingerprintInterval: time.Hour, // only the first fingerprint
		FingerprintTimeout:  5 * time.Second,
		Client:              csi.ClientConfig{Retry: csi.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}},
		OnHealthChange: func(e plugins.HealthEvent) {
			if vm := h.vm.Load(); vm != nil {
				vm.PluginChanged(e.PluginID)
			}
			select {
			case h.health <- e:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.m.Shutdown(ctx); err != nil {
			t.Errorf("manager shutdown: %v", err)
		}
	})
	if err := h.m.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

// addPlugin registers socket as plugin name's controller and waits for its
// first, healthy, fingerprint.
func (h *volHarness) addPlugin(t *testing.T, name, socket string) {
	t.Helper()
	if err := h.reg.Register(csitest.Info(dynamic.PluginTypeCSIController, name, "alloc-"+name, socket)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-h.health:
			if e.PluginID != name {
				continue
			}
			if !e.Healthy {
				t.Fatalf("plugin %s unhealthy: %s", name, e)
			}
			return
		case <-timeout:
			t.Fatalf("plugin %s never fingerprinted", name)
		}
	}
}

// startVM runs a VolumeManager over store until the test ends or stop is
// called; it becomes the one PluginChanged goes to.
func (h *volHarness) startVM(t *testing.T, store VolumeStore) (vm *VolumeManager, log *changeLog, stop func()) {
	t.Helper()
	log = newChangeLog()
	rpcTimeout := 10 * time.Second
	if h.rpcTimeout > 0 {
		rpcTimeout = h.rpcTimeout
	}
	vm, err := NewVolumeManager(VolumeManagerConfig{
		Store: store, Plugins: h.m, Logger: hclog.NewNullLogger(),
		RPCTimeout: rpcTimeout,
		BaseDelay:  5 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
		OnChange: log.add, Allocs: h.allocs,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			vm.Wait()
		})
	}
	t.Cleanup(stop)
	h.vm.Store(vm)
	if err := vm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return vm, log, stop
}

// mockVM is the usual set-up: mockcsi started with env, registered as
// plugin "mock" (its controller), and a VolumeManager over a fresh memory
// store.
func mockVM(t *testing.T, env ...string) (*mockPlugin, *VolumeManager, *changeLog) {
	t.Helper()
	p := startMockPlugin(t, env...)
	h := newVolHarness(t)
	h.addPlugin(t, "mock", p.socket)
	vm, log, _ := h.startVM(t, newMemVolumeStore())
	return p, vm, log
}

// mockPlugin is a running mockcsi, its state dir and a client of its own.
type mockPlugin struct {
	socket, stateDir string
	c                *csi.Client
}

func startMockPlugin(t *testing.T, env ...string) *mockPlugin {
	t.Helper()
	socket := csitest.StartMockCSI(t, append([]string{"MOCKCSI_RECORD_CALLS=1"}, env...)...)
	return &mockPlugin{
		socket:   socket,
		stateDir: filepath.Join(filepath.Dir(socket), "state"),
		c:        testClient(t, socket, csi.RetryPolicy{MaxAttempts: 1}),
	}
}

// mockCalls is mockcsi's calls.json.
type mockCalls struct {
	Overlaps         int64
	OverlapsByVolume map[string]int64
	MaxParallel      int
	Calls            map[string]int64
	InFlight         int
}

// calls reads calls.json once no call is in flight: it then holds every
// call made so far.
func (p *mockPlugin) calls(t *testing.T) mockCalls {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(p.stateDir, "calls.json"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err == nil {
			var c mockCalls
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("calls.json: %v\n%s", err, b)
			}
			if c.InFlight == 0 {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls.json never settled: %s", b)
		}
		time.Sleep(5 * time.Millisecond) // another process's file: nothing to wait on
	}
}

// volumes lists the plugin's volumes by name (mockcsi's volume context
// holds the name).
func (p *mockPlugin) volumes(t *testing.T) map[string]*csipb.Volume {
	t.Helper()
	resp, err := p.c.ListVolumes(t.Context(), &csipb.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*csipb.Volume{}
	for _, e := range resp.GetEntries() {
		out[e.GetVolume().GetVolumeContext()["name"]] = e.GetVolume()
	}
	return out
}

// waitAtPlugin waits until the plugin has a volume named name: mockcsi
// commits a volume before MOCKCSI_DELAY holds its answer back, so this is
// how a test knows a CreateVolume is in flight.
func (p *mockPlugin) waitAtPlugin(t *testing.T, name string) *csipb.Volume {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, ok := p.volumes(t)[name]; ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume %q never reached the plugin", name)
		}
		time.Sleep(2 * time.Millisecond) // another process's state: nothing to wait on
	}
}

const mib = 1 << 20

func volSpec(id, plugin string, capMin int64) *Volume {
	return &Volume{
		ID: id, PluginID: plugin, RequestedCapacityMin: capMin,
		RequestedCapabilities: []*VolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}},
	}
}

// settle waits until the volume is settled (ready or failed) or gone,
// woken by its record's changes, and returns the record (nil when gone).
func settle(t *testing.T, vm *VolumeManager, id string) *Volume {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := vm.waitRecord(ctx, id, func(v *Volume, err error) (bool, error) {
		if errors.Is(err, ErrVolumeNotFound) {
			return true, nil
		}
		return err != nil || v.Settled(), err
	})
	if err != nil {
		t.Fatalf("volume %s: %v (record %+v)", id, err, v)
	}
	return v
}

func requestErrorField(t *testing.T, err error) string {
	t.Helper()
	var re *RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is no RequestError", err, err)
	}
	return re.Field
}

// Create ends ready with what the plugin answered; the same request again
// is a no-op; a larger capacity expands; a smaller one and other
// capabilities are refused.
func TestVolumeCreateIdempotentAndExpand(t *testing.T) {
	t.Parallel()
	p, vm, _ := mockVM(t)

	rec, err := vm.Create(volSpec("v1", "mock", mib))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != StatePending || rec.Desired != DesiredPresent || rec.Origin != OriginCreated || rec.Name != "v1" {
		t.Fatalf("record as written: %+v", rec)
	}
	v := settle(t, vm, "v1")
	if v.State != StateReady || v.ExternalID == "" || v.Capacity != mib || v.Context["name"] != "v1" || v.Attempts != 0 {
		t.Fatalf("after create: %+v", v)
	}
	if at := p.volumes(t)["v1"]; at.GetVolumeId() != v.ExternalID || at.GetCapacityBytes() != mib {
		t.Fatalf("at the plugin: %v, record %s", at, v.ExternalID)
	}
	if n := p.calls(t).Calls["CreateVolume"]; n != 1 {
		t.Fatalf("CreateVolume calls = %d, want 1", n)
	}

	// The same request again: the same record, no work queued, no call.
	// (First let the pass that recorded "ready" return: the record is
	// written before its pass ends.)
	if err := vm.queue.AddAndWait(t.Context(), "v1"); err != nil {
		t.Fatal(err)
	}
	again, err := vm.Create(volSpec("v1", "mock", mib))
	if err != nil {
		t.Fatal(err)
	}
	if again.ExternalID != v.ExternalID || again.State != StateReady || !again.ModifyTime.Equal(v.ModifyTime) {
		t.Fatalf("second create: %+v, want %+v", again, v)
	}
	if vm.QueueStatus("v1").Pending {
		t.Fatal("an identical create queued work")
	}
	if n := p.calls(t).Calls["CreateVolume"]; n != 1 {
		t.Fatalf("CreateVolume calls after the repeat = %d, want 1", n)
	}

	// More capacity: ControllerExpandVolume, same external volume.
	if _, err := vm.Create(volSpec("v1", "mock", 2*mib)); err != nil {
		t.Fatal(err)
	}
	v = settle(t, vm, "v1")
	if v.State != StateReady || v.Capacity != 2*mib || v.RequestedCapacityMin != 2*mib || v.StateDescription != "expanded" {
		t.Fatalf("after expand: %+v", v)
	}
	c := p.calls(t)
	if c.Calls["ControllerExpandVolume"] != 1 || c.Calls["CreateVolume"] != 1 {
		t.Fatalf("calls after expand: %v", c.Calls)
	}
	if at := p.volumes(t)["v1"]; at.GetVolumeId() != v.ExternalID || at.GetCapacityBytes() != 2*mib {
		t.Fatalf("at the plugin after expand: %v", at)
	}

	// Less capacity: refused, nothing recorded.
	_, err = vm.Create(volSpec("v1", "mock", mib))
	if f := requestErrorField(t, err); f != "RequestedCapacityMin" {
		t.Fatalf("shrink refused for field %q: %v", f, err)
	}
	// Other capabilities: refused, naming the field.
	other := volSpec("v1", "mock", 2*mib)
	other.RequestedCapabilities[0].AccessMode = "multi-node-multi-writer"
	_, err = vm.Create(other)
	if f := requestErrorField(t, err); f != "RequestedCapabilities" || !strings.Contains(err.Error(), "RequestedCapabilities") {
		t.Fatalf("capability change refused as %q: %v", f, err)
	}
	if cur, _ := vm.Volume("v1"); cur.RequestedCapacityMin != 2*mib || cur.RequestedCapabilities[0].AccessMode != "single-node-writer" || cur.State != StateReady {
		t.Fatalf("a refused request changed the record: %+v", cur)
	}
}

// Register validates an existing volume's capabilities: confirmed is
// ready, unconfirmed is failed with the plugin's message.
func TestVolumeRegister(t *testing.T) {
	t.Parallel()
	p, vm, _ := mockVM(t)

	outside := volSpec("outside", "mock", mib)
	outside.Name = "outside"
	ext, err := p.c.CreateVolume(t.Context(), createRequest(outside))
	if err != nil {
		t.Fatal(err)
	}
	id := ext.GetVolume().GetVolumeId()

	spec := volSpec("reg", "mock", 0)
	spec.ExternalID = id
	spec.Context = map[string]string{"name": "outside"}
	if _, err := vm.Register(spec); err != nil {
		t.Fatal(err)
	}
	v := settle(t, vm, "reg")
	if v.State != StateReady || v.Origin != OriginRegistered || v.ExternalID != id || v.StateDescription != "registered" {
		t.Fatalf("registered: %+v", v)
	}
	if c := p.calls(t); c.Calls["ValidateVolumeCapabilities"] != 1 || c.Calls["CreateVolume"] != 1 {
		t.Fatalf("calls %v", c.Calls)
	}

	// mockcsi volumes are directories: it does not confirm block access.
	block := volSpec("reg-block", "mock", 0)
	block.ExternalID = id
	block.RequestedCapabilities[0].AttachmentMode = AttachmentBlockDevice
	if _, err := vm.Register(block); err != nil {
		t.Fatal(err)
	}
	v = settle(t, vm, "reg-block")
	if v.State != StateFailed || !strings.Contains(v.LastError, "block access is not supported") || v.Attempts != 1 {
		t.Fatalf("unconfirmed register: %+v", v)
	}
	if c := p.calls(t); c.Calls["ValidateVolumeCapabilities"] != 2 {
		t.Fatalf("calls %v", c.Calls)
	}
}

// Delete calls DeleteVolume and forgets; NOT_FOUND is done; Deregister
// forgets without a call.
func TestVolumeDeleteAndDeregister(t *testing.T) {
	t.Parallel()
	p, vm, log := mockVM(t, "MOCKCSI_FAIL=DeleteVolume:1:NOT_FOUND")

	ext := map[string]string{}
	for _, id := range []string{"notfound", "del", "dereg"} {
		if _, err := vm.Create(volSpec(id, "mock", mib)); err != nil {
			t.Fatal(err)
		}
		v := settle(t, vm, id)
		if v.State != StateReady {
			t.Fatalf("%s: %+v", id, v)
		}
		ext[id] = v.ExternalID
	}

	gone := func(id string) {
		t.Helper()
		if v := settle(t, vm, id); v != nil {
			t.Fatalf("%s still recorded: %+v", id, v)
		}
		c := log.waitFor(t, id+" deleted", func(c volChange) bool { return c.V.ID == id && c.Deleted })
		if _, err := vm.Volume(id); !errors.Is(err, ErrVolumeNotFound) {
			t.Fatalf("%s: Volume after forget: %v", id, err)
		}
		if c.V.ExternalID != ext[id] {
			t.Fatalf("deleted record %+v", c.V)
		}
	}

	// The first DeleteVolume answers NOT_FOUND (injected: the volume is
	// in fact still there): that counts as deleted.
	if _, err := vm.Delete("notfound"); err != nil {
		t.Fatal(err)
	}
	gone("notfound")
	if c := p.calls(t); c.Calls["DeleteVolume"] != 1 {
		t.Fatalf("calls %v", c.Calls)
	}

	if _, err := vm.Delete("del"); err != nil {
		t.Fatal(err)
	}
	gone("del")
	if _, ok := p.volumes(t)["del"]; ok {
		t.Fatal("deleted volume still at the plugin")
	}

	if _, err := vm.Deregister("dereg"); err != nil {
		t.Fatal(err)
	}
	gone("dereg")
	if c := p.calls(t); c.Calls["DeleteVolume"] != 2 {
		t.Fatalf("deregister called DeleteVolume: %v", c.Calls)
	}
	if at := p.volumes(t)["dereg"]; at.GetVolumeId() != ext["dereg"] {
		t.Fatalf("deregistered volume gone from the plugin: %v", p.volumes(t))
	}
	if _, err := vm.Delete("dereg"); !errors.Is(err, ErrVolumeNotFound) {
		t.Fatalf("delete of a forgotten volume: %v", err)
	}
}

// A retryable error is retried with backoff, the attempts counted in the
// record and reset at success.
func TestVolumeRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	p, vm, log := mockVM(t, "MOCKCSI_FAIL=CreateVolume:3:INTERNAL")

	if _, err := vm.Create(volSpec("flaky", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	v := settle(t, vm, "flaky")
	if v.State != StateReady || v.Attempts != 0 || v.LastError != "" || v.ExternalID == "" {
		t.Fatalf("after retries: %+v", v)
	}
	if n := p.calls(t).Calls["CreateVolume"]; n != 4 {
		t.Fatalf("CreateVolume calls = %d, want 4", n)
	}
	// The store has the record before the change is announced: wait for
	// the announcement of the success before reading the log.
	log.waitFor(t, "flaky ready", func(c volChange) bool { return c.V.ID == "flaky" && c.V.State == StateReady })
	var attempts []int
	for _, c := range log.of("flaky") {
		attempts = append(attempts, c.V.Attempts)
		if c.V.Attempts > 0 && (c.V.State != StatePending || !strings.Contains(c.V.LastError, "injected failure of CreateVolume")) {
			t.Errorf("failed attempt recorded as %+v", c.V)
		}
	}
	if want := []int{0, 1, 2, 3, 0}; !slices.Equal(attempts, want) {
		t.Fatalf("attempts seen %v, want %v", attempts, want)
	}
}

// A permanent error fails the volume after one call; a new request starts
// the count again and retries.
func TestVolumePermanentErrorFails(t *testing.T) {
	t.Parallel()
	p, vm, _ := mockVM(t, "MOCKCSI_FAIL=CreateVolume:*:INVALID_ARGUMENT")

	if _, err := vm.Create(volSpec("bad", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	v := settle(t, vm, "bad")
	if v.State != StateFailed || v.Attempts != 1 || v.StateDescription != "create failed" ||
		!strings.Contains(v.LastError, "mockcsi: injected failure of CreateVolume") || v.ExternalID != "" {
		t.Fatalf("after a permanent error: %+v", v)
	}
	// The record says failed before the pass that wrote it has returned:
	// wait for a pass after it (a no-op on a settled volume), then no
	// retry may be scheduled.
	if err := vm.queue.AddAndWait(t.Context(), "bad"); err != nil {
		t.Fatal(err)
	}
	if vm.QueueStatus("bad").Pending {
		t.Fatal("a permanent failure is queued for retry")
	}
	if n := p.calls(t).Calls["CreateVolume"]; n != 1 {
		t.Fatalf("CreateVolume calls = %d, want 1", n)
	}

	rec, err := vm.Create(volSpec("bad", "mock", mib))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != StatePending || rec.Attempts != 0 || rec.LastError != "" {
		t.Fatalf("new request recorded as %+v", rec)
	}
	v = settle(t, vm, "bad")
	if v.State != StateFailed || v.Attempts != 1 {
		t.Fatalf("after the new request: %+v", v)
	}
	if n := p.calls(t).Calls["CreateVolume"]; n != 2 {
		t.Fatalf("CreateVolume calls = %d, want 2", n)
	}
}

// A volume of a plugin not yet running waits for it, without attempts or
// retries, and is created when the plugin's first fingerprint reaches
// PluginChanged.
func TestVolumeWaitsForPlugin(t *testing.T) {
	t.Parallel()
	h := newVolHarness(t)
	vm, log, _ := h.startVM(t, newMemVolumeStore())

	if _, err := vm.Create(volSpec("early", "late", mib)); err != nil {
		t.Fatal(err)
	}
	c := log.waitFor(t, "waiting", func(c volChange) bool { return strings.HasPrefix(c.V.StateDescription, "waiting") })
	if c.V.StateDescription != `waiting for plugin "late"` || c.V.State != StatePending || c.V.Attempts != 0 || c.V.LastError != "" {
		t.Fatalf("waiting record %+v", c.V)
	}
	if err := vm.queue.AddAndWait(t.Context(), "early"); err != nil {
		t.Fatal(err)
	}
	if st := vm.QueueStatus("early"); st.Pending || st.Attempts != 0 {
		t.Fatalf("waiting is retried: %+v", st)
	}

	p := startMockPlugin(t)
	h.addPlugin(t, "late", p.socket)
	v := settle(t, vm, "early")
	if v.State != StateReady || v.ExternalID == "" {
		t.Fatalf("after the plugin came: %+v", v)
	}
}

// A fresh VolumeManager finishes what the store says is unfinished; a
// create that reached the plugin but was never recorded finds its volume
// again by name.
func TestVolumeRestartPickup(t *testing.T) {
	t.Parallel()
	p := startMockPlugin(t)
	h := newVolHarness(t)
	h.addPlugin(t, "mock", p.socket)
	store := newMemVolumeStore()

	vm1, _, stop1 := h.startVM(t, store)
	if _, err := vm1.Create(volSpec("done", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	done := settle(t, vm1, "done")
	stop1()

	// Left by a killed agent: one create never started, one that reached
	// the plugin whose answer was never recorded.
	pending := func(id string) *Volume {
		v := volSpec(id, "mock", mib)
		v.Name, v.Origin, v.Desired, v.State, v.StateDescription = id, OriginCreated, DesiredPresent, StatePending, "queued"
		v.CreateTime, v.ModifyTime = time.Now(), time.Now()
		return v
	}
	if err := store.PutVolume(pending("fresh")); err != nil {
		t.Fatal(err)
	}
	half := pending("half")
	if err := store.PutVolume(half); err != nil {
		t.Fatal(err)
	}
	made, err := p.c.CreateVolume(t.Context(), createRequest(half))
	if err != nil {
		t.Fatal(err)
	}

	vm2, _, _ := h.startVM(t, store)
	for _, id := range []string{"fresh", "half"} {
		if v := settle(t, vm2, id); v.State != StateReady || v.ExternalID == "" {
			t.Fatalf("%s after restart: %+v", id, v)
		}
	}
	if v, _ := vm2.Volume("half"); v.ExternalID != made.GetVolume().GetVolumeId() {
		t.Fatalf("half: external ID %s, the plugin made %s", v.ExternalID, made.GetVolume().GetVolumeId())
	}
	if v, _ := vm2.Volume("done"); v.ExternalID != done.ExternalID || v.State != StateReady {
		t.Fatalf("done after restart: %+v", v)
	}
	if at := p.volumes(t); len(at) != 3 {
		t.Fatalf("plugin has %d volumes, want 3 (done, fresh, half): %v", len(at), at)
	}
	// done was settled: the restart made no call for it.
	if n := p.calls(t).Calls["CreateVolume"]; n != 4 {
		t.Fatalf("CreateVolume calls = %d, want 4 (done, half directly, fresh, half again)", n)
	}
}

// Calls for one volume never overlap, whatever is requested meanwhile;
// different volumes' calls do run in parallel.
func TestVolumeCallsSerializedPerVolume(t *testing.T) {
	t.Parallel()
	p, vm, log := mockVM(t, "MOCKCSI_DELAY=CreateVolume:300ms,ControllerExpandVolume:100ms,CreateSnapshot:100ms")

	if _, err := vm.Create(volSpec("s", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	p.waitAtPlugin(t, "s") // the create is in flight, its answer delayed

	// No snapshot of a volume that has no external ID yet.
	if _, err := vm.CreateSnapshot(t.Context(), "s", "too-early"); requestErrorField(t, err) != "SourceVolumeID" {
		t.Fatalf("snapshot during create: %v", err)
	}
	// Expand and snapshot while the create is in flight: the expand waits
	// for the create's pass, the snapshot for the external ID and then
	// for the volume's slot.
	if _, err := vm.Create(volSpec("s", "mock", 2*mib)); err != nil {
		t.Fatal(err)
	}
	c := log.waitFor(t, "external ID", func(c volChange) bool { return c.V.ID == "s" && c.V.ExternalID != "" })
	snap, err := vm.CreateSnapshot(t.Context(), "s", "snap-1")
	if err != nil {
		t.Fatal(err)
	}
	if snap.SourceVolumeID != c.V.ExternalID || snap.SourceVolume != "s" || snap.ID == "" {
		t.Fatalf("snapshot %+v, want of %s", snap, c.V.ExternalID)
	}
	v := settle(t, vm, "s")
	if v.State != StateReady || v.Capacity != 2*mib || v.RequestedCapacityMin != 2*mib {
		t.Fatalf("after create, expand and snapshot: %+v", v)
	}

	// Many volumes at once.
	for i := range 6 {
		if _, err := vm.Create(volSpec(fmt.Sprintf("many-%d", i), "mock", mib)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		if v := settle(t, vm, fmt.Sprintf("many-%d", i)); v.State != StateReady {
			t.Fatalf("many-%d: %+v", i, v)
		}
	}
	calls := p.calls(t)
	if calls.Overlaps != 0 {
		t.Fatalf("overlapping calls for one volume: %d %v", calls.Overlaps, calls.OverlapsByVolume)
	}
	if calls.MaxParallel < 2 {
		t.Fatalf("MaxParallel %d: different volumes did not run in parallel", calls.MaxParallel)
	}
	if calls.Calls["CreateSnapshot"] != 1 || calls.Calls["ControllerExpandVolume"] != 1 || calls.Calls["CreateVolume"] != 7 {
		t.Fatalf("calls %v", calls.Calls)
	}
}

// A request made while a pass is calling the plugin for the same volume
// is not lost when the pass records its outcome.
func TestVolumeRequestDuringPass(t *testing.T) {
	t.Parallel()
	p, vm, _ := mockVM(t, "MOCKCSI_DELAY=CreateVolume:300ms")

	t.Run("expand", func(t *testing.T) {
		if _, err := vm.Create(volSpec("grow", "mock", mib)); err != nil {
			t.Fatal(err)
		}
		p.waitAtPlugin(t, "grow")
		if _, err := vm.Create(volSpec("grow", "mock", 2*mib)); err != nil {
			t.Fatal(err)
		}
		v := settle(t, vm, "grow")
		if v.State != StateReady || v.RequestedCapacityMin != 2*mib || v.Capacity != 2*mib {
			t.Fatalf("expand requested during the create: %+v", v)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if _, err := vm.Create(volSpec("drop", "mock", mib)); err != nil {
			t.Fatal(err)
		}
		p.waitAtPlugin(t, "drop")
		if _, err := vm.Delete("drop"); err != nil {
			t.Fatal(err)
		}
		if v := settle(t, vm, "drop"); v != nil {
			t.Fatalf("delete requested during the create: %+v", v)
		}
		if _, ok := p.volumes(t)["drop"]; ok {
			t.Fatal("volume deleted during its create is left at the plugin")
		}
	})
}

// fakeSource is a PluginSource with fixed plugin statuses; its clients are
// never dialled, so a test passes only if the capability check refuses
// before any call.
type fakeSource map[string]*plugins.PluginStatus

func (f fakeSource) Plugin(id string) (*plugins.PluginStatus, bool) { p, ok := f[id]; return p, ok }

func (f fakeSource) Client(id, _ string) (*csi.Client, error) {
	if _, ok := f[id]; !ok {
		return nil, plugins.ErrUnknownPlugin
	}
	return &csi.Client{}, nil
}

func controllerStatus(id string, healthy bool, caps ...string) *plugins.PluginStatus {
	return &plugins.PluginStatus{ID: id, ControllersExpected: 1, Allocations: []*plugins.Fingerprint{{
		PluginID: id, Type: dynamic.PluginTypeCSIController, Healthy: healthy,
		HealthDescription: "probe failed: test", ControllerCapabilities: caps,
	}}}
}

// Requests and one-off calls a plugin cannot serve are refused before any
// call, naming the field and the missing capability.
func TestVolumeCapabilityRefusals(t *testing.T) {
	t.Parallel()
	node := &plugins.PluginStatus{ID: "node", NodesExpected: 1, Allocations: []*plugins.Fingerprint{{
		PluginID: "node", Type: dynamic.PluginTypeCSINode, Healthy: true,
	}}}
	src := fakeSource{
		"basic": controllerStatus("basic", true, csi.CapControllerCreateDelete),
		"nocrt": controllerStatus("nocrt", true, csi.CapListVolumes),
		"sick":  controllerStatus("sick", false, csi.CapControllerCreateDelete),
		"node":  node,
	}
	store := newMemVolumeStore()
	vm, err := NewVolumeManager(VolumeManagerConfig{Store: store, Plugins: src})
	if err != nil {
		t.Fatal(err)
	}

	refused := []struct {
		name, field, text string
		v                 *Volume
		origin            VolumeOrigin
	}{
		{"no create capability", "PluginID", csi.CapControllerCreateDelete, volSpec("a", "nocrt", mib), OriginCreated},
		{"no clone capability", "CloneID", csi.CapCloneVolume, func() *Volume { v := volSpec("b", "basic", mib); v.CloneID = "x"; return v }(), OriginCreated},
		{"node-only plugin", "PluginID", "no controller service", volSpec("c", "node", mib), OriginCreated},
		{"no ID", "ID", "needs an ID", volSpec("", "basic", mib), OriginCreated},
	}
	for _, tc := range refused {
		_, err := vm.request(tc.v, tc.origin)
		if f := requestErrorField(t, err); f != tc.field || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: field %q, error %v", tc.name, f, err)
		}
	}
	accepted := []struct {
		name   string
		v      *Volume
		origin VolumeOrigin
	}{
		{"unknown plugin waits", volSpec("d", "ghost", mib), OriginCreated},
		{"unhealthy controller waits", volSpec("e", "sick", mib), OriginCreated},
		{"register on a node-only plugin", func() *Volume { v := volSpec("f", "node", 0); v.ExternalID = "ext"; return v }(), OriginRegistered},
	}
	for _, tc := range accepted {
		if _, err := vm.request(tc.v, tc.origin); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	// Snapshots and listings need their own capabilities and a healthy
	// controller.
	withExt := volSpec("snap-src", "basic", mib)
	withExt.Origin, withExt.Desired, withExt.State, withExt.ExternalID = OriginCreated, DesiredPresent, StateReady, "ext-1"
	if err := store.PutVolume(withExt); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	checks := []struct {
		name, text string
		err        error
	}{
		{"CreateSnapshot", csi.CapCreateDeleteSnapshot, func() error { _, err := vm.CreateSnapshot(ctx, "snap-src", ""); return err }()},
		{"DeleteSnapshot", csi.CapCreateDeleteSnapshot, vm.DeleteSnapshot(ctx, "basic", "snap")},
		{"ListSnapshots", csi.CapListSnapshots, func() error { _, err := vm.ListSnapshots(ctx, "basic"); return err }()},
		{"ExternalVolumes", csi.CapListVolumes, func() error { _, err := vm.ExternalVolumes(ctx, "basic"); return err }()},
		{"unknown plugin", "no CSI plugin", func() error { _, err := vm.ExternalVolumes(ctx, "ghost"); return err }()},
		{"no controller", "has no controller", func() error { _, err := vm.ExternalVolumes(ctx, "node"); return err }()},
		{"unhealthy controller", "not healthy: probe failed", func() error { _, err := vm.ExternalVolumes(ctx, "sick"); return err }()},
	}
	for _, c := range checks {
		if f := requestErrorField(t, c.err); f != "PluginID" || !strings.Contains(c.err.Error(), c.text) {
			t.Errorf("%s: field %q, error %v", c.name, f, c.err)
		}
	}
	if _, err := vm.CreateSnapshot(ctx, "nope", ""); !errors.Is(err, ErrVolumeNotFound) {
		t.Errorf("snapshot of an unknown volume: %v", err)
	}
}

// A step whose capability the plugin lacks fails the volume at once: no
// retry gives a plugin a capability.
func TestVolumeMissingCapabilityFails(t *testing.T) {
	t.Parallel()
	store := newMemVolumeStore()
	grow := volSpec("grow", "basic", 2*mib)
	grow.Name, grow.Origin, grow.Desired, grow.State = "grow", OriginCreated, DesiredPresent, StatePending
	grow.ExternalID, grow.Capacity = "ext-grow", mib
	gone := volSpec("gone", "nodelete", mib)
	gone.Name, gone.Origin, gone.Desired, gone.State, gone.ExternalID = "gone", OriginCreated, DesiredDeleted, StatePending, "ext-gone"
	for _, v := range []*Volume{grow, gone} {
		if err := store.PutVolume(v); err != nil {
			t.Fatal(err)
		}
	}
	vm, err := NewVolumeManager(VolumeManagerConfig{Store: store, Plugins: fakeSource{
		"basic":    controllerStatus("basic", true, csi.CapControllerCreateDelete),
		"nodelete": controllerStatus("nodelete", true, csi.CapListVolumes),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); vm.Wait() }()
	if err := vm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for id, capability := range map[string]string{"grow": csi.CapExpandVolume, "gone": csi.CapControllerCreateDelete} {
		v := settle(t, vm, id)
		if v == nil || v.State != StateFailed || v.Attempts != 1 || !strings.Contains(v.LastError, capability) {
			t.Errorf("%s: %+v", id, v)
		}
	}
}

func TestVolumePermanentClassification(t *testing.T) {
	t.Parallel()
	wrapped := func(c codes.Code) error {
		return fmt.Errorf("CreateVolume on /x.sock, attempt 1: %w", status.Error(c, "from the plugin"))
	}
	tests := []struct {
		err  error
		want bool
	}{
		{status.Error(codes.InvalidArgument, "x"), true},
		{status.Error(codes.AlreadyExists, "x"), true},
		{status.Error(codes.FailedPrecondition, "x"), true},
		{status.Error(codes.Unimplemented, "x"), true},
		{status.Error(codes.OutOfRange, "x"), true},
		{status.Error(codes.NotFound, "x"), true},
		{status.Error(codes.PermissionDenied, "x"), true},
		{status.Error(codes.Unauthenticated, "x"), true},
		{wrapped(codes.InvalidArgument), true},
		{missing(csi.CapExpandVolume), true},
		{fmt.Errorf("step: %w", missing(csi.CapListVolumes)), true},

		{status.Error(codes.Internal, "x"), false},
		{status.Error(codes.Unavailable, "x"), false},
		{status.Error(codes.Aborted, "x"), false},
		{status.Error(codes.DeadlineExceeded, "x"), false},
		{status.Error(codes.ResourceExhausted, "x"), false},
		{status.Error(codes.Unknown, "x"), false},
		{status.Error(codes.Canceled, "x"), false},
		{wrapped(codes.Unavailable), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection closed"), false},
	}
	for _, tc := range tests {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Create of an existing volume with another spec is refused naming the
// field, as Create's doc says: only capacity_min may grow.
func TestVolumeCreateRefusesOtherSpec(t *testing.T) {
	t.Parallel()
	vm, err := NewVolumeManager(VolumeManagerConfig{Store: newMemVolumeStore(), Plugins: fakeSource{
		"basic": controllerStatus("basic", true, csi.CapControllerCreateDelete),
	}})
	if err != nil {
		t.Fatal(err)
	}
	base := func() *Volume {
		v := volSpec("v", "basic", mib)
		v.Parameters = map[string]string{"tier": "fast"}
		v.MountOptions = &MountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}
		v.RequestedTopologies = &TopologyRequest{Required: []*Topology{{Segments: map[string]string{"zone": "a"}}}}
		v.Secrets = map[string]string{"token": "1"}
		return v
	}
	first, err := vm.Create(base())
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(v *Volume){
		"Name":                  func(v *Volume) { v.Name = "other" },
		"SnapshotID":            func(v *Volume) { v.SnapshotID = "snap" },
		"RequestedCapabilities": func(v *Volume) { v.RequestedCapabilities[0].AttachmentMode = AttachmentBlockDevice },
		"Parameters":            func(v *Volume) { v.Parameters["tier"] = "standard" },
		"MountOptions":          func(v *Volume) { v.MountOptions.MountFlags = nil },
		"RequestedTopologies":   func(v *Volume) { v.RequestedTopologies.Required[0].Segments["zone"] = "b" },
	}
	for field, change := range changes {
		v := base()
		change(v)
		_, err := vm.Create(v)
		if f := requestErrorField(t, err); f != field {
			t.Errorf("%s changed: refused for %q: %v", field, f, err)
		}
	}
	// The same spec again, nil and empty alike, is the same request.
	same := base()
	same.Secrets = map[string]string{"token": "2"} // secrets are not the volume's spec
	if again, err := vm.Create(same); err != nil || !again.ModifyTime.Equal(first.ModifyTime) {
		t.Fatalf("same spec: %+v, %v", again, err)
	}
	plain, err := vm.Create(volSpec("p", "basic", mib))
	if err != nil {
		t.Fatal(err)
	}
	empty := volSpec("p", "basic", mib)
	empty.Parameters, empty.MountOptions, empty.RequestedTopologies = map[string]string{}, &MountOptions{}, &TopologyRequest{}
	if again, err := vm.Create(empty); err != nil || !again.ModifyTime.Equal(plain.ModifyTime) {
		t.Fatalf("empty for nil: %+v, %v", again, err)
	}
}

// An agent stopped while a create is in flight leaves the record pending
// as it was, not a failed attempt, and the next agent finds the volume the
// interrupted call made.
func TestVolumeStopDuringCall(t *testing.T) {
	t.Parallel()
	p := startMockPlugin(t, "MOCKCSI_DELAY=CreateVolume:1s")
	h := newVolHarness(t)
	h.addPlugin(t, "mock", p.socket)
	store := newMemVolumeStore()

	vm1, log1, stop1 := h.startVM(t, store)
	if _, err := vm1.Create(volSpec("cut", "mock", mib)); err != nil {
		t.Fatal(err)
	}
	made := p.waitAtPlugin(t, "cut")
	stop1()
	v, err := store.Volume("cut")
	if err != nil {
		t.Fatal(err)
	}
	if v.State != StatePending || v.ExternalID != "" || v.Attempts != 0 || v.LastError != "" {
		t.Fatalf("record after a stop during the call: %+v (changes %d)", v, len(log1.of("cut")))
	}

	vm2, _, _ := h.startVM(t, store)
	if v := settle(t, vm2, "cut"); v.State != StateReady || v.ExternalID != made.GetVolumeId() {
		t.Fatalf("after restart: %+v, the plugin made %s", v, made.GetVolumeId())
	}
	if n := len(p.volumes(t)); n != 1 {
		t.Fatalf("plugin has %d volumes", n)
	}
}
