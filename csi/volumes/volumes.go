package volumes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/reconcile"
)

// Defaults for VolumeManagerConfig.
const (
	DefaultVolumeWorkers = 16
	DefaultVolumeRPC     = time.Minute
)

// PluginSource is what the volume code needs of the CSI manager;
// *plugins.Manager implements it.
type PluginSource interface {
	Plugin(id string) (*plugins.PluginStatus, bool)
	Client(id, pluginType string) (*csi.Client, error)
}

// VolumeManagerConfig configures a VolumeManager. Store and Plugins are
// required.
type VolumeManagerConfig struct {
	Store   VolumeStore
	Plugins PluginSource
	Logger  hclog.Logger
	// Workers bounds how many volumes are worked on at once
	// (DefaultVolumeWorkers): one slow volume never stalls the others, and
	// never two calls for one volume run at once.
	Workers int
	// RPCTimeout bounds each CSI call (DefaultVolumeRPC).
	RPCTimeout time.Duration
	// BaseDelay and MaxDelay bound the retry delay of a failed attempt
	// (see reconcile.Config); zero means the queue's defaults.
	BaseDelay, MaxDelay time.Duration
	// Allocs, if set, tells whether a claim's allocation ended; claims of
	// ended allocations are released without anyone asking.
	Allocs AllocSource
	// MountRoot, if set, is the root under which the node plugins' staging
	// and publish paths lie (the agent's <data_dir>/csi): the directories
	// made and removed there are made and removed beneath it, following no
	// link, since the plugin tasks write in there and the agent is root.
	// Unset, paths are taken as they are (a CO of its own, tests).
	MountRoot string
	// OnChange, if set, is called after every change of a volume's record
	// (deleted: the record is gone), from the goroutine that made it, with
	// the record lock held, in the order of the changes. It must not call
	// the request methods (Create, Register, Delete, Deregister).
	OnChange func(v *Volume, deleted bool)
}

// VolumeManager creates, registers, expands and deletes volumes through a
// durable reconcile queue (package doc, "Volumes").
type VolumeManager struct {
	cfg   VolumeManagerConfig
	log   hclog.Logger
	queue *reconcile.Queue

	// recMu serialises every read-modify-write of a record, per volume:
	// requests, and passes recording their outcome. Without it a pass that read the
	// record before a delete request would write it back as it was.
	recMu recordLocks
	// inflight are the mount steps' plugin calls, which a release cancels
	// (claim_inflight.go).
	inflight inflightCalls

	mu      sync.Mutex
	changed chan struct{}
}

// NewVolumeManager builds a manager; Start runs it.
func NewVolumeManager(cfg VolumeManagerConfig) (*VolumeManager, error) {
	if cfg.Store == nil || cfg.Plugins == nil {
		return nil, errors.New("csi volumes: Store and Plugins are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultVolumeWorkers
	}
	if cfg.RPCTimeout <= 0 {
		cfg.RPCTimeout = DefaultVolumeRPC
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	vm := &VolumeManager{cfg: cfg, log: log.Named("volumes"), changed: make(chan struct{})}
	q, err := reconcile.New(reconcile.Config{
		Reconcile: vm.reconcile, Workers: cfg.Workers, Logger: vm.log,
		BaseDelay: cfg.BaseDelay, MaxDelay: cfg.MaxDelay, Jitter: true,
	})
	if err != nil {
		return nil, err
	}
	vm.queue = q
	return vm, nil
}

// Start runs the workers until ctx ends and queues every volume with work
// left: whatever a killed agent left unfinished is picked up here.
func (vm *VolumeManager) Start(ctx context.Context) error {
	vm.queue.Run(ctx)
	vols, err := vm.cfg.Store.Volumes()
	if err != nil {
		return fmt.Errorf("csi volumes: loading: %w", err)
	}
	for _, v := range vols {
		if !v.Settled() || len(v.Claims) > 0 {
			// Claims too: their allocations may have ended while the
			// agent was down.
			vm.queue.Add(v.ID)
		}
	}
	return nil
}

// Wait waits for the workers Start started, after its ctx ended.
func (vm *VolumeManager) Wait() { vm.queue.Wait() }

// PluginChanged queues the unsettled volumes of a plugin: the agent calls it
// when a plugin's health changes, so that work waiting for a controller
// resumes when one is there, without polling.
func (vm *VolumeManager) PluginChanged(pluginID string) {
	vols, err := vm.cfg.Store.Volumes()
	if err != nil {
		vm.log.Warn("listing volumes after a plugin change", "plugin_id", pluginID, "error", err)
		return
	}
	for _, v := range vols {
		if v.PluginID == pluginID && (!v.Settled() || !v.claimsSettled()) {
			vm.queue.Add(v.ID)
		}
	}
}

// Volume returns a copy of one volume's record.
func (vm *VolumeManager) Volume(id string) (*Volume, error) { return vm.cfg.Store.Volume(id) }

// Volumes returns every volume's record.
func (vm *VolumeManager) Volumes() ([]*Volume, error) { return vm.cfg.Store.Volumes() }

// Create records that v should exist at its plugin and queues the work. A
// volume that exists already is left as it is when the spec is the same,
// and expanded when only RequestedCapacityMin grew (as Nomad's `volume
// create` does); any other difference is refused. It returns the record as
// written; OnChange follows the work.
func (vm *VolumeManager) Create(v *Volume) (*Volume, error) {
	return vm.request(v, OriginCreated)
}

// Register records an existing volume (ExternalID set) and queues the
// check of its capabilities (ValidateVolumeCapabilities).
func (vm *VolumeManager) Register(v *Volume) (*Volume, error) {
	return vm.request(v, OriginRegistered)
}

// RequestError is a request the manager refuses as it stands (a field and
// why); the HTTP API turns it into a 400 naming the field.
type RequestError struct {
	Field string
	Err   error
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

func requestErrorf(field, format string, args ...any) *RequestError {
	return &RequestError{Field: field, Err: fmt.Errorf(format, args...)}
}

func (vm *VolumeManager) request(v *Volume, origin VolumeOrigin) (*Volume, error) {
	if v == nil || v.ID == "" || v.PluginID == "" {
		return nil, requestErrorf("ID", "a volume needs an ID and a plugin ID")
	}
	if err := vm.checkPlugin(v, origin); err != nil {
		return nil, err
	}
	defer vm.recMu.lock(v.ID)()
	cur, err := vm.cfg.Store.Volume(v.ID)
	switch {
	case errors.Is(err, ErrVolumeNotFound):
		now := time.Now()
		nv := v.Clone()
		if nv.Name == "" {
			nv.Name = nv.ID
		}
		nv.Origin, nv.Desired, nv.State = origin, DesiredPresent, StatePending
		nv.StateDescription = "queued"
		nv.Attempts, nv.LastError = 0, ""
		nv.Capacity, nv.AccessibleTopology = 0, nil
		if origin == OriginCreated {
			nv.ExternalID, nv.Context = "", v.Context
		}
		nv.CreateTime, nv.ModifyTime = now, now
		return nv, vm.commit(nv, true)
	case err != nil:
		return nil, err
	}
	if cur.Desired != DesiredPresent {
		return nil, requestErrorf("ID", "volume %q is being %s; wait until it is gone", v.ID, cur.Desired)
	}
	if cur.Origin != origin || cur.PluginID != v.PluginID {
		return nil, requestErrorf("ID", "volume %q already exists (%s with plugin %q)", v.ID, cur.Origin, cur.PluginID)
	}
	next := cur.Clone()
	next.RequestedCapacityMin = max(cur.RequestedCapacityMin, v.RequestedCapacityMin)
	next.RequestedCapacityMax = v.RequestedCapacityMax
	if diff := specDiff(cur, v); diff != "" {
		return nil, requestErrorf(diff, "volume %q already exists with a different %s; only capacity_min can grow", v.ID, diff)
	}
	if v.RequestedCapacityMin < cur.RequestedCapacityMin {
		return nil, requestErrorf("RequestedCapacityMin", "volume %q is %d bytes; volumes do not shrink", v.ID, cur.RequestedCapacityMin)
	}
	if next.RequestedCapacityMin == cur.RequestedCapacityMin && cur.State != StateFailed {
		return cur, nil // the same request again: nothing to do
	}
	if next.RequestedCapacityMin > cur.RequestedCapacityMin && !vm.pluginCan(v.PluginID, csi.CapExpandVolume) {
		return nil, requestErrorf("RequestedCapacityMin", "volume %q cannot grow: plugin %q lacks the %s capability",
			v.ID, v.PluginID, csi.CapExpandVolume)
	}
	// A new request: work resumes, and its attempts count from zero.
	next.State, next.StateDescription, next.Attempts, next.LastError = StatePending, "queued", 0, ""
	next.Generation++
	next.ModifyTime = time.Now()
	return next, vm.commit(next, true)
}

// specDiff names the first field, other than capacity, in which req differs
// from the recorded volume; "" if none.
func specDiff(cur, req *Volume) string {
	switch {
	case req.Name != "" && req.Name != cur.Name:
		return "Name"
	case req.SnapshotID != cur.SnapshotID:
		return "SnapshotID"
	case req.CloneID != cur.CloneID:
		return "CloneID"
	case cur.Origin == OriginRegistered && req.ExternalID != cur.ExternalID:
		return "ExternalID"
	case !slices.EqualFunc(req.RequestedCapabilities, cur.RequestedCapabilities,
		func(a, b *VolumeCapability) bool { return *a == *b }):
		return "RequestedCapabilities"
	case !maps.Equal(req.Parameters, cur.Parameters):
		return "Parameters"
	case !sameMountOptions(req.MountOptions, cur.MountOptions):
		return "MountOptions"
	case !sameTopologyRequest(req.RequestedTopologies, cur.RequestedTopologies):
		return "RequestedTopologies"
	}
	return ""
}

func sameMountOptions(a, b *MountOptions) bool {
	if a == nil {
		a = &MountOptions{}
	}
	if b == nil {
		b = &MountOptions{}
	}
	return a.FSType == b.FSType && slices.Equal(a.MountFlags, b.MountFlags)
}

func sameTopologyRequest(a, b *TopologyRequest) bool {
	if a == nil {
		a = &TopologyRequest{}
	}
	if b == nil {
		b = &TopologyRequest{}
	}
	same := func(x, y *Topology) bool { return maps.Equal(x.Segments, y.Segments) }
	return slices.EqualFunc(a.Required, b.Required, same) && slices.EqualFunc(a.Preferred, b.Preferred, same)
}

// checkPlugin refuses a request the plugin cannot serve, when the plugin is
// known: better a clear error now than an RPC that must fail. An unknown
// plugin (not yet running) is waited for by the reconciler.
func (vm *VolumeManager) checkPlugin(v *Volume, origin VolumeOrigin) error {
	p, ok := vm.cfg.Plugins.Plugin(v.PluginID)
	if !ok {
		return nil
	}
	ctl := p.Controller()
	if ctl == nil || !ctl.Healthy || len(ctl.ControllerCapabilities) == 0 {
		if origin == OriginCreated && p.Node() != nil && !p.ControllerRequired {
			return requestErrorf("PluginID", "plugin %q has no controller service, so it cannot create volumes", v.PluginID)
		}
		return nil
	}
	switch {
	case origin == OriginCreated && !slices.Contains(ctl.ControllerCapabilities, csi.CapControllerCreateDelete):
		return requestErrorf("PluginID", "plugin %q cannot create volumes (no %s capability)", v.PluginID, csi.CapControllerCreateDelete)
	case v.CloneID != "" && !slices.Contains(ctl.ControllerCapabilities, csi.CapCloneVolume):
		return requestErrorf("CloneID", "plugin %q cannot clone volumes (no %s capability)", v.PluginID, csi.CapCloneVolume)
	}
	return nil
}

// pluginCan reports whether a plugin's controller has a capability; an
// unknown or unfingerprinted controller gets the benefit of the doubt (the
// reconciler checks again before calling).
func (vm *VolumeManager) pluginCan(pluginID, capability string) bool {
	p, ok := vm.cfg.Plugins.Plugin(pluginID)
	if !ok {
		return true
	}
	ctl := p.Controller()
	if ctl == nil || !ctl.Healthy || len(ctl.ControllerCapabilities) == 0 {
		return true
	}
	return slices.Contains(ctl.ControllerCapabilities, capability)
}

// Delete records that the volume is to be deleted at its plugin and then
// forgotten, and queues the work.
func (vm *VolumeManager) Delete(id string) (*Volume, error) {
	return vm.setDesired(id, DesiredDeleted)
}

// Deregister records that the volume is to be forgotten, leaving it at the
// plugin.
func (vm *VolumeManager) Deregister(id string) (*Volume, error) {
	return vm.setDesired(id, DesiredDeregistered)
}

func (vm *VolumeManager) setDesired(id string, d VolumeDesired) (*Volume, error) {
	defer vm.recMu.lock(id)()
	v, err := vm.cfg.Store.Volume(id)
	if err != nil {
		return nil, err
	}
	if live := liveClaims(v); len(live) > 0 {
		return nil, requestErrorf("ID", "volume %q is in use by allocation %s; stop it first (claims of allocations that ended are released on their own; `volume detach` releases them now)",
			id, strings.Join(live, ", "))
	}
	if d == DesiredDeleted && v.Origin == OriginRegistered && v.ExternalID == "" {
		return nil, requestErrorf("ID", "volume %q has no external ID to delete", id)
	}
	if v.Desired == d && v.State != StateFailed {
		vm.queue.Add(id)
		return v, nil
	}
	v.Desired, v.State, v.StateDescription = d, StatePending, "queued"
	v.Attempts, v.LastError = 0, ""
	v.Generation++
	v.ModifyTime = time.Now()
	return v, vm.commit(v, true)
}

// commit writes v and tells the watchers; enqueue also queues the work.
func (vm *VolumeManager) commit(v *Volume, enqueue bool) error {
	if err := vm.cfg.Store.PutVolume(v); err != nil {
		return fmt.Errorf("recording volume %q: %w", v.ID, err)
	}
	vm.changedVolume(v, false)
	if enqueue {
		vm.queue.Add(v.ID)
	}
	return nil
}

func (vm *VolumeManager) changedVolume(v *Volume, deleted bool) {
	vm.mu.Lock()
	close(vm.changed)
	vm.changed = make(chan struct{})
	vm.mu.Unlock()
	if vm.cfg.OnChange != nil {
		vm.cfg.OnChange(v.Clone(), deleted)
	}
}

// waitRecord reads volume id, and again after every change of any record,
// until check says the wait is over; check gets what the store answered
// (nil and ErrVolumeNotFound for a volume that is gone) and returns its
// own error. When ctx ends first it returns the last record read and
// ctx.Err() itself, for the caller to say what it waited for.
func (vm *VolumeManager) waitRecord(ctx context.Context, id string, check func(v *Volume, err error) (bool, error)) (*Volume, error) {
	for {
		vm.mu.Lock()
		changed := vm.changed
		vm.mu.Unlock()
		v, err := vm.cfg.Store.Volume(id)
		if done, err := check(v, err); done || err != nil {
			return v, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// QueueStatus reports whether work is queued or running for the volume.
func (vm *VolumeManager) QueueStatus(id string) reconcile.Status { return vm.queue.Status(id) }

// QueueStats reports the volume queue's depth and retries, for metrics.
func (vm *VolumeManager) QueueStats() reconcile.Stats { return vm.queue.Stats() }

// reconcileVolume takes the next step of the volume's own work (create,
// expand, validate, delete, forget) from v, the record as the pass read it,
// which it changes; claims.go calls it. See doc.go, "Volumes".
func (vm *VolumeManager) reconcileVolume(ctx context.Context, v *Volume) (reconcile.Result, error) {
	if v.Settled() {
		return reconcile.Result{}, nil
	}
	gen := v.Generation
	if v.Desired == DesiredDeregistered || v.Desired == DesiredDeleted && v.ExternalID == "" && v.Origin != OriginCreated {
		return reconcile.Result{}, vm.forget(v)
	}

	ctl, wait := vm.controller(v)
	if wait != "" {
		if v.StateDescription != wait {
			v.StateDescription = wait
			v.ModifyTime = time.Now()
			if err := vm.recordOutcome(v, gen); err != nil {
				return reconcile.Result{}, err
			}
		}
		// Not an attempt: the plugin's next health change queues the
		// volume again (PluginChanged).
		return reconcile.Result{}, nil
	}

	step, err := vm.step(ctx, v, ctl)
	if err != nil && ctx.Err() != nil {
		// The agent is stopping, which is no failure of the step: the
		// record stays as it was, and the next Start redoes the step.
		return reconcile.Result{}, ctx.Err()
	}
	if err == nil {
		if v.Desired == DesiredDeleted {
			return reconcile.Result{}, vm.forget(v)
		}
		v.State, v.StateDescription, v.Attempts, v.LastError = StateReady, step, 0, ""
		v.ModifyTime = time.Now()
		return reconcile.Result{}, vm.recordOutcome(v, gen)
	}
	v.Attempts++
	v.LastError = err.Error()
	v.ModifyTime = time.Now()
	if permanent(err) {
		v.State, v.StateDescription = StateFailed, fmt.Sprintf("%s failed", step)
		vm.log.Warn("volume work failed for good", "volume", v.ID, "step", step, "error", err)
		return reconcile.Result{}, vm.recordOutcome(v, gen)
	}
	v.StateDescription = fmt.Sprintf("%s: attempt %d failed, retrying", step, v.Attempts)
	if cerr := vm.recordOutcome(v, gen); cerr != nil {
		return reconcile.Result{}, cerr
	}
	return reconcile.Result{}, fmt.Errorf("volume %q: %s: %w", v.ID, step, err)
}

// controller returns the client of the volume's controller, or why the work
// must wait for it. A registered volume of a plugin without a controller
// needs none.
func (vm *VolumeManager) controller(v *Volume) (*controllerClient, string) {
	p, ok := vm.cfg.Plugins.Plugin(v.PluginID)
	if !ok {
		return nil, fmt.Sprintf("waiting for plugin %q", v.PluginID)
	}
	fp := p.Controller()
	if fp == nil {
		if v.Origin == OriginRegistered && v.Desired == DesiredPresent && !p.ControllerRequired {
			return &controllerClient{}, ""
		}
		return nil, fmt.Sprintf("waiting for a controller of plugin %q", v.PluginID)
	}
	if !fp.Healthy {
		return nil, fmt.Sprintf("waiting for plugin %q's controller to be healthy (%s)", v.PluginID, fp.HealthDescription)
	}
	c, err := vm.cfg.Plugins.Client(v.PluginID, dynamic.PluginTypeCSIController)
	if err != nil {
		return nil, fmt.Sprintf("waiting for plugin %q's controller: %v", v.PluginID, err)
	}
	return &controllerClient{Client: c, caps: fp.ControllerCapabilities}, ""
}

// controllerClient is a controller's client with its capabilities; a nil
// Client stands for "no controller".
type controllerClient struct {
	*csi.Client
	caps []string
}

func (c *controllerClient) has(capability string) bool { return slices.Contains(c.caps, capability) }

// errMissingCapability is permanent: no retry gives a plugin a capability.
var errMissingCapability = errors.New("the plugin lacks the capability")

func missing(capability string) error {
	return fmt.Errorf("%w %s", errMissingCapability, capability)
}

// step makes the one CSI call the volume needs next and applies its answer
// to v (not yet recorded). It returns the step's name for status views.
func (vm *VolumeManager) step(ctx context.Context, v *Volume, c *controllerClient) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, vm.cfg.RPCTimeout)
	defer cancel()
	switch {
	case v.Desired == DesiredDeleted:
		if !c.has(csi.CapControllerCreateDelete) {
			if v.ExternalID == "" {
				return "delete", nil // it can never have been created
			}
			return "delete", missing(csi.CapControllerCreateDelete)
		}
		if v.ExternalID == "" {
			// A create may have reached the plugin before the agent died
			// or gave up on its answer. CreateVolume is idempotent by
			// name: asking again returns that volume's ID, so it can be
			// deleted rather than left behind unknown. A create that
			// cannot succeed means there is nothing to delete.
			resp, err := c.CreateVolume(ctx, createRequest(v))
			if err != nil {
				if permanent(err) {
					return "delete", nil
				}
				return "delete", err
			}
			v.ExternalID = resp.GetVolume().GetVolumeId()
			if v.ExternalID == "" {
				return "delete", nil
			}
		}
		_, err := c.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: v.ExternalID, Secrets: v.Secrets})
		if isNotFound(err) {
			err = nil // already gone: what delete wanted
		}
		return "delete", err

	case v.Origin == OriginCreated && v.ExternalID == "":
		if !c.has(csi.CapControllerCreateDelete) {
			return "create", missing(csi.CapControllerCreateDelete)
		}
		resp, err := c.CreateVolume(ctx, createRequest(v))
		if err != nil {
			return "create", err
		}
		cv := resp.GetVolume()
		if cv.GetVolumeId() == "" {
			return "create", status.Error(codes.Internal, "the plugin's CreateVolume answer has no volume_id")
		}
		v.ExternalID, v.Capacity, v.Context = cv.GetVolumeId(), cv.GetCapacityBytes(), cv.GetVolumeContext()
		v.AccessibleTopology = fromTopologies(cv.GetAccessibleTopology())
		return "created", nil

	case v.RequestedCapacityMin > v.Capacity && v.Capacity > 0:
		if !c.has(csi.CapExpandVolume) {
			return "expand", missing(csi.CapExpandVolume)
		}
		resp, err := c.ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{
			VolumeId: v.ExternalID, Secrets: v.Secrets,
			CapacityRange:    &csipb.CapacityRange{RequiredBytes: v.RequestedCapacityMin, LimitBytes: v.RequestedCapacityMax},
			VolumeCapability: firstCapability(v),
		})
		if err != nil {
			return "expand", err
		}
		v.Capacity = resp.GetCapacityBytes()
		return "expanded", nil

	case v.Origin == OriginRegistered:
		if c.Client == nil {
			return "registered", nil
		}
		resp, err := c.ValidateVolumeCapabilities(ctx, &csipb.ValidateVolumeCapabilitiesRequest{
			VolumeId: v.ExternalID, VolumeContext: v.Context, Parameters: v.Parameters, Secrets: v.Secrets,
			VolumeCapabilities: capabilities(v),
		})
		if err != nil {
			return "validate", err
		}
		if resp.GetConfirmed() == nil {
			return "validate", status.Errorf(codes.InvalidArgument, "the plugin does not confirm the volume's capabilities: %s", resp.GetMessage())
		}
		return "registered", nil
	}
	return "ready", nil
}

// recordOutcome writes what a pass learned. The plugin's facts (external
// ID, capacity, context, topology) are kept whatever happened meanwhile,
// since they describe what exists; the progress fields only if no request
// came since the pass read the record (gen): the newer intent wins, and
// the request's Add runs the volume again.
func (vm *VolumeManager) recordOutcome(out *Volume, gen uint64) error {
	defer vm.recMu.lock(out.ID)()
	cur, err := vm.cfg.Store.Volume(out.ID)
	if errors.Is(err, ErrVolumeNotFound) {
		return nil // forgotten meanwhile (a deregister)
	}
	if err != nil {
		return err
	}
	// Claims and the ControllerPublish state belong to the claim code, and
	// requests change claims (Claim, Release) without a new generation:
	// they are kept as they are now, never as the pass read them, or a
	// claim made while a volume step was in flight would be lost.
	out.Claims = cur.Claims
	out.ControllerPublish, out.PublishContext, out.NodeID = cur.ControllerPublish, cur.PublishContext, cur.NodeID
	if cur.Generation == gen {
		return vm.commit(out, false)
	}
	if out.ExternalID != "" && cur.ExternalID != out.ExternalID {
		cur.ExternalID, cur.Context = out.ExternalID, out.Context
		cur.AccessibleTopology = out.AccessibleTopology
	}
	cur.Capacity = max(cur.Capacity, out.Capacity)
	return vm.commit(cur, false)
}

// forget removes the record, unless a request since the pass began wants
// the volume kept.
func (vm *VolumeManager) forget(v *Volume) error {
	defer vm.recMu.lock(v.ID)()
	cur, err := vm.cfg.Store.Volume(v.ID)
	if errors.Is(err, ErrVolumeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.Desired == DesiredPresent {
		return nil // cannot happen: requests refuse to revive a volume being removed
	}
	if err := vm.cfg.Store.DeleteVolume(v.ID); err != nil {
		return fmt.Errorf("forgetting volume %q: %w", v.ID, err)
	}
	vm.log.Info("volume forgotten", "volume", v.ID, "desired", v.Desired)
	vm.changedVolume(v, true)
	vm.queue.Forget(v.ID)
	return nil
}

// permanent reports whether a failed step cannot succeed on retry: the
// user must change something first. Everything else (ABORTED, UNAVAILABLE,
// a timeout, INTERNAL, a closed connection) is retried with backoff.
func permanent(err error) bool {
	if errors.Is(err, errMissingCapability) {
		return true
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.AlreadyExists, codes.FailedPrecondition, codes.Unimplemented,
		codes.OutOfRange, codes.NotFound, codes.PermissionDenied, codes.Unauthenticated:
		return true
	}
	return false
}
