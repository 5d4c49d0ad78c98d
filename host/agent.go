package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/csi/volumes"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/csiplugin"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/metrics"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/reconcile"
	"github.com/pluginhost/pluginhost/sdk"
)

// Version is the agent's version, reported by the API.
const Version = "0.1.0"

// StateFileName is the bbolt file under the data dir.
const StateFileName = "state.db"

// Options are what NewAgent needs besides the configuration.
type Options struct {
	Logger hclog.Logger
	// LogmonCommand starts a log shipper; nil means this binary's
	// `logmon` subcommand.
	LogmonCommand []string
	// NsexecCommand starts a task that has volumes (package nsexec); nil
	// means this binary's `nsexec` subcommand.
	NsexecCommand []string
	// ExtraHooks adds task hooks after the CSI plugin supervisor, which
	// every agent has. Nil means none.
	ExtraHooks func(req *taskrunner.HookRequest) []taskrunner.Hook
}

// Agent is one running pluginhost agent. Create it with NewAgent, run it
// with Run.
type Agent struct {
	cfg    *config.Config
	logger hclog.Logger

	metrics  *metrics.Metrics
	db       *state.DB
	registry *dynamic.Registry
	// health is the latest health check of every generic plugin
	// allocation (CSI plugins' is the CSI manager's fingerprint).
	health    *csiplugin.HealthTable
	csi       *plugins.Manager
	volumes   *volumes.VolumeManager
	watcher   *driver.Watcher
	cgroups   *cgroup.Manager
	runnerCfg *taskrunner.Config
	events    *broker
	taskQueue *eventQueue

	// cpuMHz and cpuCores turn CPU percentages into Nomad's MHz
	// (TotalTicks); read once at start.
	cpuMHz   float64
	cpuCores int

	startTime time.Time
	ready     atomic.Bool
	addr      string

	// jobQueue runs reconcileJob, keyed by job ID.
	jobQueue *reconcile.Queue
	// jobMu is held by a submission from its commit until its runners are
	// tracked, and by a reconcile pass while it decides: a pass never sees
	// a recorded version without its allocations.
	jobMu sync.Mutex

	mu     sync.Mutex
	allocs map[string]*allocEntry
	// changed is closed and replaced whenever an allocation's status
	// may have changed; waiters select on it instead of polling.
	changed chan struct{}
	// gcKick wakes the garbage collector when an allocation finished.
	gcKick chan struct{}

	// runCtx is Run's context: goroutines started on behalf of requests
	// live as long as the agent, not as long as the request.
	runCtx context.Context

	// follower follows the registry's events of every plugin type.
	follower typeFollower

	wg sync.WaitGroup
}

// allocEntry is an allocation the agent runs or remembers.
type allocEntry struct {
	runner *taskrunner.AllocRunner
	jobID  string
	// created never changes; kept here so that listings sort without
	// taking a full snapshot (events included) of every allocation.
	created time.Time
	// stopping: a stop was started (under Agent.mu).
	stopping bool
}

// NewAgent opens the state store, restores the plugin registry and starts the
// CSI manager. Allocations are restored by Run.
func NewAgent(cfg *config.Config, opts Options) (a *Agent, err error) {
	if cfg == nil {
		return nil, errors.New("agent: no configuration")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	a = &Agent{
		cfg:       cfg,
		logger:    logger.Named("agent"),
		events:    newBroker(),
		taskQueue: newEventQueue(),
		allocs:    make(map[string]*allocEntry),
		changed:   make(chan struct{}),
		gcKick:    make(chan struct{}, 1),
		startTime: time.Now(),
		metrics:   metrics.New(),
		health:    csiplugin.NewHealthTable(),
	}
	a.cpuMHz, a.cpuCores = cpuFingerprint()
	// Undo what was built if a later step fails.
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: data dir: %w", err)
	}
	if err := checkStateFile(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.db, err = state.Open(filepath.Join(cfg.DataDir, StateFileName), state.Options{Logger: logger, Commits: a.metrics})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	// Method values: a itself is nil by the time a failed NewAgent runs
	// its closers (the named result is set by `return nil, err`).
	closers = append(closers, closeIgnoring(a.db.Close))
	// After the state file's lock: only the agent owning the data dir may
	// create the node ID.
	nodeID, err := loadNodeID(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}

	a.registry, err = dynamic.New(dynamic.Config{Store: a.db, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("agent: restoring the plugin registry: %w", err)
	}
	closers = append(closers, a.registry.Shutdown)

	a.csi, err = plugins.NewManager(plugins.ManagerConfig{
		Registry:            a.registry,
		Logger:              logger,
		FingerprintInterval: cfg.CSI.FingerprintInterval,
		FingerprintTimeout:  cfg.CSI.ProbeTimeout,
		OnHealthChange:      a.onHealthChange,
		Client:              csi.ClientConfig{Observer: a.metrics},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: csi manager: %w", err)
	}

	a.volumes, err = volumes.NewVolumeManager(volumes.VolumeManagerConfig{
		Store: a.db, Plugins: a.csi, Logger: logger, OnChange: a.onVolumeChange, Allocs: a.db,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: volume manager: %w", err)
	}

	a.jobQueue, err = reconcile.New(reconcile.Config{
		Reconcile: a.reconcileJob,
		Logger:    logger.Named("jobs"),
	})
	if err != nil {
		return nil, fmt.Errorf("agent: job queue: %w", err)
	}
	if err := a.watchMetrics(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}

	a.watcher, err = driver.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("agent: process watcher: %w", err)
	}
	closers = append(closers, closeIgnoring(a.watcher.Close))
	drivers, err := driver.Builtin(a.watcher, &driver.GoPluginConfig{
		Watcher:    a.watcher,
		Handshake:  sdk.Handshake(),
		PluginSets: sdk.HostPlugins(),
		Dispense:   sdk.PluginCSI,
		Logger:     logger.Named("go_plugin"),
	}, cfg.Containment.ChrootEnv)
	if err != nil {
		return nil, fmt.Errorf("agent: drivers: %w", err)
	}

	a.cgroups = cgroup.Detect(logger.Named("cgroup"), cgroup.Options{Parent: cfg.Containment.CgroupParent})
	if a.cgroups.Enabled() {
		a.logger.Info("tasks run in cgroups", "version", a.cgroups.Version(), "parent", a.cgroups.Parent())
	} else {
		a.logger.Warn("cgroups cannot be used: task resources are not enforced, and a stop kills only a task's process group", "reason", a.cgroups.Reason())
	}
	a.runnerCfg = &taskrunner.Config{
		Cgroups:       a.cgroups,
		DataDir:       cfg.DataDir,
		SocketRoot:    cfg.Plugin.SocketDir,
		Store:         a.db,
		Drivers:       drivers,
		LogmonCommand: opts.LogmonCommand,
		NsexecCommand: opts.NsexecCommand,
		AllocHooks: func(req *taskrunner.AllocHookRequest) []taskrunner.AllocHook {
			if len(req.Group.Volumes) == 0 {
				return nil
			}
			return []taskrunner.AllocHook{volumeHook{a: a}}
		},
		OnEvent:    a.taskQueue.push,
		Metrics:    a.metrics,
		NodeName:   cfg.NodeName,
		NodeID:     nodeID,
		Datacenter: cfg.Datacenter,
		LogLevel:   cfg.LogLevel,
		Logger:     logger,
	}
	mountRoot := filepath.Join(cfg.DataDir, "csi")
	if err := shareMountRoot(mountRoot); err != nil {
		// Without privileges nothing can be mounted anyway; volumes will
		// fail with the plugin's own error.
		if !errNotPrivileged(err) {
			return nil, fmt.Errorf("agent: %w", err)
		}
		logger.Warn("CSI mount root not shared; tasks with volumes may keep copies of unstaged mounts", "error", err)
	}
	csiHooks, err := csiplugin.NewHook(csiplugin.Config{
		Registry:      a.registry,
		MountRoot:     mountRoot,
		Logger:        logger,
		ProbeInterval: cfg.CSI.FingerprintInterval,
		ProbeTimeout:  cfg.CSI.ProbeTimeout,
		Conns:         a.csi,
		RPCObserver:   a.metrics,
		Health:        a.health,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: csi plugin supervisor: %w", err)
	}
	a.runnerCfg.ExtraHooks = func(req *taskrunner.HookRequest) []taskrunner.Hook {
		if req != nil {
			if t := genericPluginType(req.Task); t != "" {
				// Before the supervisor can register it.
				a.followType(t)
			}
		}
		hooks := csiHooks(req)
		if opts.ExtraHooks != nil {
			hooks = append(hooks, opts.ExtraHooks(req)...)
		}
		return hooks
	}
	return a, nil
}

// closeIgnoring adapts a Close method value for NewAgent's closers.
func closeIgnoring(closeFn func() error) func() { return func() { _ = closeFn() } }

// Registry is the agent's plugin registry (the CSI supervisor registers
// plugins in it).
func (a *Agent) Registry() *dynamic.Registry { return a.registry }

// Config is the agent's configuration.
func (a *Agent) Config() *config.Config { return a.cfg }

// Ready reports whether every plugin known at start has been fingerprinted.
func (a *Agent) Ready() bool { return a.ready.Load() }

// Run restores allocations, starts the HTTP API and the job files of the
// configuration, and blocks until ctx ends; then it shuts down, leaving every
// task running. serve runs for as long as the agent does, once allocations
// are restored (cmd/pluginhost serves the HTTP API there, on a listener it
// opened before Run so that a taken address fails before anything starts);
// it may be nil.
func (a *Agent) Run(ctx context.Context, serve func(context.Context) error) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.runCtx = runCtx
	a.mu.Unlock()

	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.forwardTaskEvents(runCtx)
	}()
	a.followRegistry(runCtx)

	if err := a.csi.Start(); err != nil {
		a.shutdown()
		return fmt.Errorf("agent: csi manager: %w", err)
	}
	if err := a.restore(); err != nil {
		a.shutdown()
		return err
	}
	// Every job is reconciled once at start: whatever a killed agent left
	// unfinished (an update, a stop, a purge) is finished from the record.
	a.jobQueue.Run(runCtx)
	if err := a.volumes.Start(runCtx); err != nil {
		cancel()
		a.shutdown()
		return fmt.Errorf("agent: %w", err)
	}
	if err := a.reconcileAll(); err != nil {
		cancel()
		a.shutdown()
		return err
	}

	if a.cfg.GC.Interval > 0 {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.gc(runCtx)
		}()
	}

	serveErr := make(chan error, 1)
	if serve != nil {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := serve(runCtx); err != nil {
				serveErr <- err
				cancel()
			}
		}()
	}

	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.waitReady(runCtx)
	}()

	for _, path := range a.cfg.Jobs {
		if err := a.runJobFile(runCtx, path); err != nil {
			a.logger.Error("job file from the configuration not started", "file", path, "error", err)
		}
	}

	<-runCtx.Done()
	if a.cfg.DevMode {
		// A dev agent's data dir is thrown away after it: its tasks go
		// with it rather than running on without state.
		a.stopAll()
	}
	a.shutdown()
	select {
	case err := <-serveErr:
		return fmt.Errorf("agent: http api: %w", err)
	default:
		return nil
	}
}

// waitReady marks the agent ready once the CSI manager has fingerprinted
// every plugin it knew at start.
func (a *Agent) waitReady(ctx context.Context) {
	if err := a.csi.WaitReady(ctx); err != nil {
		return
	}
	a.ready.Store(true)
	csiPlugins, other := a.readyCounts()
	a.logger.Info("agent ready", "plugins", csiPlugins+other, "csi_plugins", csiPlugins, "other_plugins", other)
	a.events.publish(&api.Event{Topic: api.TopicAgent, Type: "Ready", Key: a.cfg.NodeName,
		Payload: api.EventPayload{Message: "restored plugins fingerprinted"}})
}

// readyCounts counts the plugins the agent is ready with: CSI plugins by
// plugin ID (a monolith's node and controller halves are one plugin, as in
// `plugin status`), every other type by type and name, from the registry.
func (a *Agent) readyCounts() (csiPlugins, other int) {
	csiPlugins = len(a.csi.Plugins())
	for _, t := range a.registry.Types() {
		if !isCSIType(t) {
			other += len(a.registry.List(t))
		}
	}
	return csiPlugins, other
}

// reconcileAll adds every job the agent knows of to the job queue: those
// with a record and those with allocations only.
func (a *Agent) reconcileAll() error {
	recs, err := a.db.Jobs()
	if err != nil {
		return fmt.Errorf("agent: loading jobs: %w", err)
	}
	for _, js := range recs {
		a.jobQueue.Add(js.Job.ID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.allocs {
		a.jobQueue.Add(e.jobID)
	}
	return nil
}

// restore rebuilds the runner of every stored allocation and starts it:
// live tasks are re-adopted, dead ones go through their restart policy.
func (a *Agent) restore() error {
	stored, err := a.db.LoadAllocs()
	if err != nil {
		return fmt.Errorf("agent: loading allocations: %w", err)
	}
	sweepCgroups(a.cgroups, stored, a.logger)
	for _, as := range stored {
		ar, err := taskrunner.RestoreAllocRunner(a.runnerCfg, as)
		if err != nil {
			a.logger.Error("allocation not restored", "alloc_id", as.Alloc.ID, "error", err)
			continue
		}
		a.track(&allocEntry{runner: ar, jobID: as.Alloc.JobID})
		ar.Run()
	}
	if len(stored) > 0 {
		a.logger.Info("allocations restored", "count", len(stored))
	}
	return nil
}

func (a *Agent) runJobFile(ctx context.Context, path string) error {
	job, err := jobspec.ParseFile(path)
	if err != nil {
		return err
	}
	_, err = a.RunJob(ctx, job)
	return err
}

// Close releases an agent whose Run was never called (Run releases
// everything itself when it returns).
func (a *Agent) Close() { a.shutdown() }

// shutdown lets go of everything without stopping tasks.
func (a *Agent) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No pass may start allocations while they are being let go of.
	a.jobQueue.Wait()
	a.volumes.Wait()
	if err := a.csi.Shutdown(ctx); err != nil {
		a.logger.Warn("csi manager shutdown", "error", err)
	}
	a.mu.Lock()
	runners := make([]*taskrunner.AllocRunner, 0, len(a.allocs))
	for _, e := range a.allocs {
		runners = append(runners, e.runner)
	}
	a.mu.Unlock()
	for _, ar := range runners {
		if err := ar.Shutdown(ctx); err != nil {
			a.logger.Warn("allocation shutdown", "alloc_id", ar.ID(), "error", err)
		}
	}
	a.taskQueue.close()
	a.registry.Shutdown()
	a.wg.Wait()
	a.events.close()
	if err := a.watcher.Close(); err != nil {
		a.logger.Warn("process watcher close", "error", err)
	}
	if err := a.db.Close(); err != nil {
		a.logger.Warn("state store close", "error", err)
	}
	a.logger.Info("agent stopped; tasks keep running")
}

// notifyChanged wakes everyone waiting for an allocation status change.
func (a *Agent) notifyChanged() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// onHealthChange turns CSI health changes into API events.
func (a *Agent) onHealthChange(ev plugins.HealthEvent) {
	// Volume work waiting for this plugin's controller resumes now.
	if a.volumes != nil {
		a.volumes.PluginChanged(ev.PluginID)
	}
	typ := "PluginUnhealthy"
	if ev.Healthy {
		typ = "PluginHealthy"
	}
	var controllerRequired bool
	if p, ok := a.csi.Plugin(ev.PluginID); ok {
		controllerRequired = p.ControllerRequired
	}
	a.events.publish(&api.Event{
		Topic: api.TopicPlugin, Type: typ, Key: ev.PluginID, Time: ev.Time.UnixNano(),
		Payload: api.EventPayload{AllocID: ev.AllocID, PluginType: ev.Type, Message: ev.Description,
			Plugin: &api.CSIInfo{PluginID: ev.PluginID, AllocID: ev.AllocID, Healthy: ev.Healthy,
				HealthDescription: ev.Description, UpdateTime: ev.Time, RequiresControllerPlugin: controllerRequired}},
	})
}

// forwardTaskEvents publishes queued task events with a fresh snapshot of
// their allocation. It runs outside the task runners' goroutines because
// taking a snapshot from inside their event callback could deadlock.
func (a *Agent) forwardTaskEvents(ctx context.Context) {
	for {
		batch, ok := a.taskQueue.pop(ctx)
		if !ok {
			return
		}
		for _, m := range batch {
			a.events.publish(&api.Event{
				Topic: api.TopicTask, Type: m.ev.Type, Key: m.allocID, Time: m.ev.Time.UnixNano(),
				Payload: api.EventPayload{AllocID: m.allocID, TaskName: m.task, TaskEvent: taskEvent(m.ev)},
			})
			if e := a.entry(m.allocID); e != nil {
				// A task's change may settle its allocation, which an
				// update of its job waits for.
				a.jobQueue.Add(e.jobID)
				stub := allocation(e.runner).Stub()
				a.events.publish(&api.Event{
					Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: m.allocID,
					Payload: api.EventPayload{JobID: stub.JobID, AllocID: m.allocID, Allocation: stub},
				})
			}
		}
		a.notifyChanged()
	}
}

// track adds an allocation and publishes its final state once all its
// tasks are dead: the runners mark a task dead after its last task event,
// so without this no event would ever show a stopped allocation complete.
func (a *Agent) track(e *allocEntry) {
	e.created = e.runner.State().Alloc.CreateTime
	a.mu.Lock()
	a.allocs[e.runner.ID()] = e
	ctx := a.runCtx
	a.mu.Unlock()
	if ctx == nil {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		select {
		case <-e.runner.Done():
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			return // the runner was shut down with the agent
		}
		stub := allocation(e.runner).Stub()
		a.events.publish(&api.Event{
			Topic: api.TopicAllocation, Type: "AllocationUpdated", Key: stub.ID,
			Payload: api.EventPayload{JobID: stub.JobID, AllocID: stub.ID, Allocation: stub},
		})
		a.notifyChanged()
		a.jobQueue.Add(e.jobID)
		a.kickGC()
	}()
}

func (a *Agent) entry(allocID string) *allocEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.allocs[allocID]
}

// eventQueue carries task events from the task runners' goroutines to
// forwardTaskEvents without blocking them.
type eventQueue struct {
	mu     sync.Mutex
	items  []taskEventMsg
	wake   chan struct{}
	closed bool
}

type taskEventMsg struct {
	allocID, task string
	ev            *state.TaskEvent
}

func newEventQueue() *eventQueue { return &eventQueue{wake: make(chan struct{}, 1)} }

func (q *eventQueue) push(allocID, task string, ev *state.TaskEvent) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, taskEventMsg{allocID, task, ev})
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for events and returns all of them; ok is false once the queue
// is closed and drained, or ctx ended.
func (q *eventQueue) pop(ctx context.Context) ([]taskEventMsg, bool) {
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		if len(items) > 0 {
			return items, true
		}
		if closed {
			return nil, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
