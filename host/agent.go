package host

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/claimhook"
	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/events"
	"github.com/pluginhost/pluginhost/host/idpool"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/leftovers"
	"github.com/pluginhost/pluginhost/host/metrics"
	"github.com/pluginhost/pluginhost/host/mounts"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/beneath"
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
	health    *supervisor.HealthTable
	csi       *plugins.Manager
	volumes   *volumes.VolumeManager
	watcher   *driver.Watcher
	cgroups   *cgroup.Manager
	runnerCfg *taskrunner.Config
	events    *events.Broker
	taskQueue *events.TaskQueue
	// jobs owns the allocation runners: it runs the job reconciler and
	// the collector, and answers which allocations there are.
	jobs *jobs.Reconciler

	// cpu turns CPU percentages into Nomad's MHz (TotalTicks).
	cpu cgroup.Machine

	startTime time.Time
	ready     atomic.Bool

	mu   sync.Mutex
	addr string
	// runCtx is Run's context: goroutines started on behalf of requests
	// (a consumer's broker lease) end with it. Guarded by mu.
	runCtx context.Context
	// brokerClosed are the launches whose go-plugin broker
	// a consumer's lease closed: restarting, so not handed to a new
	// consumer, whose callbacks would fail. Guarded by mu.
	brokerClosed map[launchKey]bool
	// leases counts the broker leases held on each launch. Guarded by mu.
	leases map[launchKey]int

	// follower follows the registry's events of every plugin type.
	follower *events.RegistryFollower

	// mountRoot is the CSI mount root; trees are the task-writable trees
	// the agent made nosuid,nodev mounts (package mounts).
	mountRoot *mounts.Root
	trees     []string

	wg sync.WaitGroup
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
		events:    events.NewBroker(),
		taskQueue: events.NewTaskQueue(),
		startTime: time.Now(),
		metrics:   metrics.New(),
		health:    supervisor.NewHealthTable(),
	}
	a.cpu = cgroup.DetectMachine()
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
	if err := leftovers.CheckStateFile(cfg.DataDir, StateFileName); err != nil {
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
	a.follower = events.NewRegistryFollower(a.registry, a.events.Publish, &a.wg)

	dialPlugin, err := pluginDialer(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.csi, err = plugins.NewManager(plugins.ManagerConfig{
		Registry:            a.registry,
		Logger:              logger,
		FingerprintInterval: cfg.CSI.FingerprintInterval,
		FingerprintTimeout:  cfg.CSI.ProbeTimeout,
		OnHealthChange:      func(ev plugins.HealthEvent) { onHealthChange(a.events.Publish, a.volumes, a.csi, ev) },
		Client:              csi.ClientConfig{Observer: a.metrics, Dial: dialPlugin},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: csi manager: %w", err)
	}

	a.volumes, err = volumes.NewVolumeManager(volumes.VolumeManagerConfig{
		Store: a.db, Plugins: a.csi, Logger: logger, Allocs: a.db, MountRoot: filepath.Join(cfg.DataDir, "csi"),
		OnChange: func(v *volumes.Volume, deleted bool) { onVolumeChange(a.events.Publish, a.volumes, a.csi, v, deleted) },
	})
	if err != nil {
		return nil, fmt.Errorf("agent: volume manager: %w", err)
	}

	factory := &allocFactory{db: a.db, volumes: a.volumes}
	a.jobs, err = jobs.New(jobs.Config{
		Store: a.db, Factory: factory, Logger: logger,
		Exclusive: claimhook.Exclusive,
		OnJobEvent: func(jobID, typ, msg string) {
			a.events.Publish(&api.Event{Topic: api.TopicJob, Type: typ, Key: jobID,
				Payload: api.EventPayload{JobID: jobID, Message: msg}})
		},
		OnAllocDone: func(r jobs.Runner) { a.events.Publish(apiconv.AllocationEvent(r.State(), r.AllocDir())) },
		GC:          cfg.GC, DataDir: cfg.DataDir,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	factory.jobOf = a.jobs.JobOf
	if err := watchMetrics(a); err != nil {
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
	}, driver.ExecOptions{
		ChrootEnv:    cfg.Containment.ChrootEnv,
		AllowHostPID: cfg.Containment.Exec.AllowPIDModeHost,
		AllowHostIPC: cfg.Containment.Exec.AllowIPCModeHost,
		Seccomp:      cfg.Containment.Exec.Seccomp,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: drivers: %w", err)
	}

	a.cgroups = cgroup.Detect(logger.Named("cgroup"), cgroup.Options{Parent: cfg.CgroupParent()})
	if a.cgroups.Enabled() {
		a.logger.Info("tasks run in cgroups", "version", a.cgroups.Version(), "parent", a.cgroups.Parent())
	} else {
		a.logger.Warn("cgroups cannot be used: task resources are not enforced, and a stop kills only a task's process group", "reason", a.cgroups.Reason())
	}
	ids, err := dynamicIDs(cfg, a.logger)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	factory.runners = &taskrunner.Config{
		IDs:            ids,
		UserAllowed:    userAllowed(cfg),
		Cgroups:        a.cgroups,
		PidsLimit:      cfg.Containment.PidsLimit,
		MaxKillTimeout: cfg.MaxKillTimeout,
		DataDir:        cfg.DataDir,
		SocketRoot:     cfg.Plugin.SocketDir,
		Store:          a.db,
		Drivers:        drivers,
		LogmonCommand:  opts.LogmonCommand,
		NsexecCommand:  opts.NsexecCommand,
		AllocHooks: func(req *taskrunner.AllocHookRequest) []taskrunner.AllocHook {
			if len(req.Group.Volumes) == 0 {
				return nil
			}
			return []taskrunner.AllocHook{claimhook.Hook{Volumes: a.volumes,
				MountTimeout: cfg.CSI.VolumeMountTimeout, Logger: logger.Named("csi_volumes")}}
		},
		OnEvent:    a.taskQueue.Push,
		Metrics:    a.metrics,
		NodeName:   cfg.NodeName,
		NodeID:     nodeID,
		Datacenter: cfg.Datacenter,
		LogLevel:   cfg.LogLevel,
		Logger:     logger,
	}
	a.runnerCfg = factory.runners
	a.mountRoot = &mounts.Root{Dir: filepath.Join(cfg.DataDir, "csi")}
	if err := a.containTrees(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	csiHooks, err := supervisor.NewHook(supervisor.Config{
		Registry:        a.registry,
		MountRoot:       a.mountRoot.Dir,
		EnsureMountRoot: a.mountRoot.Ensure,
		Logger:          logger,
		ProbeInterval:   cfg.CSI.FingerprintInterval,
		ProbeTimeout:    cfg.CSI.ProbeTimeout,
		Conns:           a.csi,
		RPCObserver:     a.metrics,
		Health:          a.health,
		Dial:            dialPlugin,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: csi plugin supervisor: %w", err)
	}
	a.runnerCfg.ExtraHooks = func(req *taskrunner.HookRequest) []taskrunner.Hook {
		if req != nil {
			if p := req.Task.GenericPlugin(); p != nil {
				// Before the supervisor can register it.
				a.follower.Follow(p.Type)
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

// containTrees makes the trees tasks write nosuid,nodev mounts of their
// own (package mounts): the allocation tree and the socket root.
func (a *Agent) containTrees() error {
	sockRoot, err := taskrunner.SocketRoot(a.cfg.DataDir, a.cfg.Plugin.SocketDir)
	if err != nil {
		return err
	}
	for _, dir := range []string{filepath.Join(a.cfg.DataDir, "alloc"), sockRoot} {
		if err := mounts.ContainTree(dir); err != nil {
			if mounts.NotPrivileged(err) {
				a.logger.Warn("task directories not mounted nosuid,nodev (no privileges)", "dir", dir, "error", err)
				continue
			}
			return err
		}
		a.trees = append(a.trees, dir)
	}
	return nil
}

// releaseMounts removes, at a clean stop, the mounts and the parent cgroup
// nothing needs any more (package mounts, cgroup.Manager.RemoveParent).
func (a *Agent) releaseMounts() {
	if a.mountRoot != nil {
		if err := a.mountRoot.Release(); err != nil {
			a.logger.Warn("CSI mount root not released", "error", err)
		}
	}
	for _, dir := range a.trees {
		if err := mounts.ReleaseTree(dir); err != nil {
			a.logger.Warn("task directory mount not released", "dir", dir, "error", err)
		}
	}
	if a.cgroups != nil {
		// The default parent's own parent (/pluginhost) is every
		// default agent's: it goes too once the last one leaves it.
		if _, err := a.cgroups.RemoveParent(a.cfg.Containment.CgroupParent == ""); err != nil {
			a.logger.Warn("parent cgroup not removed", "error", err)
		}
	}
}

// pluginDialer is how the agent connects to a plugin's socket by its
// path (CSI fingerprints, probes, volume calls): the agent is root, and a
// plugin may replace its socket with a link to another process's. Below
// the socket root and the data dir no link is followed, and the process
// listening must own the socket file (beneath.DialPath).
func pluginDialer(cfg *config.Config) (func(ctx context.Context, socket string) (net.Conn, error), error) {
	root, err := taskrunner.SocketRoot(cfg.DataDir, cfg.Plugin.SocketDir)
	if err != nil {
		return nil, err
	}
	roots := []string{root, cfg.DataDir}
	return func(ctx context.Context, socket string) (net.Conn, error) {
		c, _, err := beneath.DialPath(ctx, socket, roots)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, nil
}

// dynamicIDs is the pool of the users block's range, nil when it is off
// or the agent cannot give ids away (it is not root: exec tasks need root
// anyway).
func dynamicIDs(cfg *config.Config, logger hclog.Logger) (*idpool.Pool, error) {
	c := cfg.Containment
	if !c.DynamicUsers() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		logger.Warn("dynamic workload users need root: exec tasks without a user run as nobody")
		return nil, nil
	}
	p, err := idpool.New(uint32(c.DynamicUserMin), uint32(c.DynamicUserMax))
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	// Every agent of the machine defaults to the same range: the leases
	// keep two from handing out the same uid.
	l, err := idpool.OpenLeases(IDLeaseDir, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	p.ShareWith(l)
	return p, nil
}

// IDLeaseDir is where the machine's agents record which of them holds
// which dynamic id (idpool.Leases).
const IDLeaseDir = "/run/pluginhost/ids"

// userAllowed is denied_host_uids and denied_host_gids at a task's launch:
// a job recorded before the configuration changed is held to it too.
func userAllowed(cfg *config.Config) func(u *driver.User) error {
	c := cfg.Containment
	return func(u *driver.User) error {
		if c.DeniedHostUIDs.Contains(u.UID) {
			return fmt.Errorf("running as uid %d is disallowed by denied_host_uids = %q", u.UID, c.DeniedHostUIDs.String())
		}
		for _, g := range append([]uint32{u.GID}, u.Groups...) {
			if c.DeniedHostGIDs.Contains(g) {
				return fmt.Errorf("running as gid %d is disallowed by denied_host_gids = %q", g, c.DeniedHostGIDs.String())
			}
		}
		return nil
	}
}

// closeIgnoring adapts a Close method value for NewAgent's closers.
func closeIgnoring(closeFn func() error) func() { return func() { _ = closeFn() } }

// Registry is the agent's plugin registry (the CSI supervisor registers
// plugins in it).
func (a *Agent) Registry() *dynamic.Registry { return a.registry }

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
	a.follower.Start(runCtx)

	if err := a.csi.Start(); err != nil {
		a.shutdown()
		return fmt.Errorf("agent: csi manager: %w", err)
	}
	jobIDs, err := a.restore()
	if err != nil {
		a.shutdown()
		return err
	}
	if err := a.volumes.Start(runCtx); err != nil {
		cancel()
		a.shutdown()
		return fmt.Errorf("agent: %w", err)
	}
	// Every job is reconciled once at start, once the volume manager runs
	// (a revert checks claims): whatever a killed agent left unfinished
	// (an update, a stop, a purge) is finished from the record.
	a.jobs.Run(runCtx, jobIDs)

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
		// Ready once the CSI manager has fingerprinted every plugin it
		// knew at start.
		if err := a.csi.WaitReady(runCtx); err != nil {
			return
		}
		a.ready.Store(true)
		csiPlugins, other := readyCounts(a.csi, a.registry)
		a.logger.Info("agent ready", "plugins", csiPlugins+other, "csi_plugins", csiPlugins, "other_plugins", other)
		a.events.Publish(&api.Event{Topic: api.TopicAgent, Type: "Ready", Key: a.cfg.NodeName,
			Payload: api.EventPayload{Message: "restored plugins fingerprinted"}})
	}()

	for _, path := range a.cfg.Jobs {
		job, err := jobspec.ParseFile(path)
		if err == nil {
			_, err = a.RunJob(runCtx, job)
		}
		if err != nil {
			a.logger.Error("job file from the configuration not started", "file", path, "error", err)
		}
	}

	<-runCtx.Done()
	if a.cfg.DevMode {
		// A dev agent's data dir is thrown away after it: its tasks go
		// with it rather than running on without state.
		sctx, scancel := context.WithTimeout(context.Background(), jobs.StopTimeout)
		a.jobs.StopAll(sctx)
		scancel()
	}
	a.shutdown()
	select {
	case err := <-serveErr:
		return fmt.Errorf("agent: http api: %w", err)
	default:
		return nil
	}
}

// restore rebuilds the runner of every stored allocation and hands it to
// the job reconciler, which starts it: live tasks are re-adopted, dead ones
// go through their restart policy. It returns every job with a record.
func (a *Agent) restore() ([]string, error) {
	recs, err := a.db.Jobs()
	if err != nil {
		return nil, fmt.Errorf("agent: loading jobs: %w", err)
	}
	stored, err := a.db.LoadAllocs()
	if err != nil {
		return nil, fmt.Errorf("agent: loading allocations: %w", err)
	}
	// Every runner is built before any starts: the sweep must know which
	// allocations came back (a task of one that did not is no one's to
	// end) and must be done before a restored task launches again.
	restored := make([]*state.AllocState, 0, len(stored))
	runners := make([]*taskrunner.AllocRunner, 0, len(stored))
	for _, as := range stored {
		ar, err := taskrunner.RestoreAllocRunner(a.runnerCfg, as)
		if err != nil {
			a.logger.Error("allocation not restored", "alloc_id", as.Alloc.ID, "error", err)
			continue
		}
		restored, runners = append(restored, as), append(runners, ar)
	}
	leftovers.Cgroups(a.cgroups, stored, restored, a.logger)
	if root, err := taskrunner.SocketRoot(a.cfg.DataDir, a.cfg.Plugin.SocketDir); err == nil {
		leftovers.SocketDirs(root, stored, a.logger)
	}
	for i, ar := range runners {
		if jobs.NeverLaunched(restored[i]) {
			// Recorded but held back (a superseded version was still
			// alive): the first pass starts it when the bound allows.
			a.jobs.Track(ar)
		} else {
			a.jobs.Adopt(ar)
		}
	}
	if len(stored) > 0 {
		a.logger.Info("allocations restored", "count", len(stored))
	}
	ids := make([]string, len(recs))
	for i, js := range recs {
		ids[i] = js.Job.ID
	}
	return ids, nil
}

// Close releases an agent whose Run was never called (Run releases
// everything itself when it returns).
func (a *Agent) Close() { a.shutdown() }

// shutdown lets go of everything without stopping tasks.
func (a *Agent) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No pass may start allocations while they are being let go of.
	a.jobs.Wait()
	a.volumes.Wait()
	if err := a.csi.Shutdown(ctx); err != nil {
		a.logger.Warn("csi manager shutdown", "error", err)
	}
	running := a.removeDeadSocketDirs()
	a.jobs.Shutdown(ctx)
	a.taskQueue.Close()
	a.registry.Shutdown()
	a.wg.Wait()
	a.events.Close()
	if err := a.watcher.Close(); err != nil {
		a.logger.Warn("process watcher close", "error", err)
	}
	if err := a.db.Close(); err != nil {
		a.logger.Warn("state store close", "error", err)
	}
	a.releaseMounts()
	a.removeSocketRoot()
	// Say what is true: a dev agent stopped its tasks before this.
	if running == 0 {
		a.logger.Info("agent stopped; no task of it is running")
	} else {
		a.logger.Info("agent stopped; its tasks keep running", "tasks", running)
	}
}

// removeDeadSocketDirs removes, at a stop, the socket directories of
// allocations whose tasks are all dead (the collector removes them too,
// but a stopping agent would leave the last ones, and a dev agent all of
// them), then the socket root if nothing is left in it. It returns how
// many tasks still run.
func (a *Agent) removeDeadSocketDirs() (running int) {
	for _, r := range a.jobs.All() {
		dead := true
		for _, t := range r.State().Tasks {
			if t.State.State != state.TaskStateDead {
				dead = false
				running++
			}
		}
		if dead {
			if err := os.RemoveAll(r.SocketDir()); err != nil {
				a.logger.Warn("removing a dead allocation's sockets", "alloc_id", r.ID(), "error", err)
			}
		}
	}
	return running
}

// removeSocketRoot removes the socket root at a stop if the agent chose
// it and nothing is left in it (rmdir refuses one that is not empty): a
// stopped dev agent left /run/pluginhost/<hash>/... behind, hundreds of
// them after test runs. It runs after releaseMounts, which unmounts the
// root if the agent had made it a mount.
func (a *Agent) removeSocketRoot() {
	if a.cfg.Plugin.SocketDir != "" {
		return
	}
	if root, err := taskrunner.SocketRoot(a.cfg.DataDir, ""); err == nil {
		_ = os.Remove(root)
	}
}

// onHealthChange turns CSI health changes into API events.
// volumes is nil until NewAgent has built it (the CSI manager, built
// first, may report before).
func onHealthChange(publish func(*api.Event), volumes *volumes.VolumeManager, mgr *plugins.Manager, ev plugins.HealthEvent) {
	// Volume work waiting for this plugin's controller resumes now.
	if volumes != nil {
		volumes.PluginChanged(ev.PluginID)
	}
	typ := "PluginUnhealthy"
	if ev.Healthy {
		typ = "PluginHealthy"
	}
	var controllerRequired bool
	if p, ok := mgr.Plugin(ev.PluginID); ok {
		controllerRequired = p.ControllerRequired
	}
	publish(&api.Event{
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
		batch, ok := a.taskQueue.Pop(ctx)
		if !ok {
			return
		}
		for _, m := range batch {
			a.events.Publish(&api.Event{
				Topic: api.TopicTask, Type: m.Event.Type, Key: m.AllocID, Time: m.Event.Time.UnixNano(),
				Payload: api.EventPayload{AllocID: m.AllocID, TaskName: m.Task, TaskEvent: apiconv.TaskEvent(m.Event)},
			})
			if r := a.jobs.Alloc(m.AllocID); r != nil {
				// A task's change may settle its allocation, which an
				// update of its job waits for.
				ev := apiconv.AllocationEvent(r.State(), r.AllocDir())
				a.jobs.Enqueue(ev.Payload.JobID)
				a.events.Publish(ev)
			}
		}
	}
}

// readyCounts counts the plugins the agent is ready with: CSI plugins by
// plugin ID (a monolith's node and controller halves are one plugin, as in
// `plugin status`), every other type by type and name, from the registry.
func readyCounts(mgr *plugins.Manager, reg *dynamic.Registry) (csiPlugins, other int) {
	csiPlugins = len(mgr.Plugins())
	for _, t := range reg.Types() {
		if !isCSIType(t) {
			other += len(reg.List(t))
		}
	}
	return csiPlugins, other
}
