package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/beneath"
	"github.com/pluginhost/pluginhost/sdk"
)

// Task event types, as Nomad names them.
const (
	EventPluginHealthy   = "Plugin became healthy"
	EventPluginUnhealthy = "Plugin became unhealthy"
	// EventPluginNotHealthy: a launch's plugin failed before it was ever
	// healthy (it cannot "become" unhealthy); said once per launch.
	EventPluginNotHealthy = "Plugin not healthy"
)

// SocketName is the CSI endpoint's file name in the allocation's socket
// directory, as in Nomad.
const SocketName = "csi.sock"

// HookName is the supervisor's name in task hook lists and logs.
const HookName = "csi_plugin_supervisor"

// supervisor is the hook of one task. It lives as long as the task runner,
// across every launch of the task; each launch that reaches poststart gets
// one supervision (a goroutine) that Exited or Stop ends.
type supervisor struct {
	cfg     *Config
	logger  hclog.Logger
	plugin  jobspec.TaskCSIPluginConfig
	allocID string
	// goPlugin tasks are reached over their go-plugin socket; the others
	// over CSI_ENDPOINT.
	goPlugin bool
	// types are the registry types the csi_plugin type maps to, in
	// registration order.
	types []string
	// mountDir is <MountRoot>/<type>/<id>; stageDir is where the plugin
	// stages and publishes, inside it.
	mountDir, stageDir string
	// defaultSocket is <socket dir>/csi.sock, the endpoint given to tasks
	// that do not choose their own.
	defaultSocket string
	// healthTimeout is csi_plugin's health_timeout, defaulted for records
	// that never went through the parser.
	healthTimeout time.Duration

	// generic is a go_plugin task whose config declares a plugin that is
	// not CSI: probed with the gRPC health service, registered under its
	// own type, restarted when unhealthy for longer than health_timeout.
	// Its plugin holds the declared name (ID), type and health_timeout;
	// nothing CSI-specific (mount dirs, CSI_ENDPOINT) applies to it.
	generic bool
	// label names the plugin in messages: "CSI plugin ID" or
	// "plugin TYPE/NAME".
	label string

	mu  sync.Mutex
	cur *supervision
}

func newSupervisor(cfg *Config, req *taskrunner.HookRequest, logger hclog.Logger) *supervisor {
	if req.Task.CSIPluginConfig == nil {
		return newGenericSupervisor(cfg, req, logger)
	}
	p := *req.Task.CSIPluginConfig
	s := &supervisor{
		label:   "CSI plugin " + p.ID,
		cfg:     cfg,
		logger:  logger.With("alloc_id", req.AllocID, "task", req.Task.Name, "plugin_id", p.ID),
		plugin:  p,
		allocID: req.AllocID,
		// Everything but go_plugin speaks CSI on CSI_ENDPOINT; an unknown
		// driver fails in the validate hook before this matters.
		goPlugin:      req.Task.Driver == jobspec.DriverGoPlugin,
		types:         registryTypes(p.Type),
		mountDir:      filepath.Join(cfg.MountRoot, p.Type, p.ID),
		defaultSocket: filepath.Join(req.SocketDir, SocketName),
	}
	s.stageDir = hostStageDir(s.mountDir, p.MountDir, p.StagePublishBaseDir)
	s.healthTimeout = p.HealthTimeout
	if s.healthTimeout <= 0 {
		s.healthTimeout = jobspec.DefaultCSIHealthTimeout
	}
	return s
}

// registryTypes maps a csi_plugin type to registry types, in the order
// their registrations are made (for a monolith, in one RegisterAll).
func registryTypes(t string) []string {
	switch t {
	case jobspec.CSIPluginTypeMonolith:
		return []string{dynamic.PluginTypeCSINode, dynamic.PluginTypeCSIController}
	case jobspec.CSIPluginTypeNode:
		return []string{dynamic.PluginTypeCSINode}
	case jobspec.CSIPluginTypeController:
		return []string{dynamic.PluginTypeCSIController}
	}
	return nil
}

// hostStageDir translates the job's stage_publish_base_dir, a path inside
// the task's mount_dir as Nomad's container drivers see it, to the host:
// raw_exec and go_plugin tasks see the host's filesystem, so the plugin
// must be handed host paths. A base dir outside mount_dir has no host
// counterpart and falls back to the mount dir itself.
func hostStageDir(hostMount, taskMount, taskBase string) string {
	if taskMount == "" || taskBase == "" {
		return hostMount
	}
	rel, err := filepath.Rel(filepath.Clean(taskMount), filepath.Clean(taskBase))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return hostMount
	}
	return filepath.Join(hostMount, rel)
}

// newGenericSupervisor supervises a go_plugin task whose config has a
// plugin block (checked by NewHook's caller).
func newGenericSupervisor(cfg *Config, req *taskrunner.HookRequest, logger hclog.Logger) *supervisor {
	p := req.Task.Config.Plugin
	s := &supervisor{
		cfg:      cfg,
		logger:   logger.With("alloc_id", req.AllocID, "task", req.Task.Name, "plugin_type", p.Type, "plugin_name", p.Name),
		plugin:   jobspec.TaskCSIPluginConfig{ID: p.Name, Type: p.Type, HealthTimeout: p.HealthTimeout},
		allocID:  req.AllocID,
		goPlugin: true,
		generic:  true,
		label:    "plugin " + p.Type + "/" + p.Name,
		types:    []string{p.Type},
	}
	s.healthTimeout = p.HealthTimeout
	if s.healthTimeout <= 0 {
		s.healthTimeout = jobspec.DefaultPluginHealthTimeout
	}
	return s
}

func (s *supervisor) Name() string { return HookName }

// validate catches what no restart can fix. The job parser already checks
// both fields; an allocation restored from an older or hand-edited store
// may not have been through it.
func (s *supervisor) validate() error {
	if s.generic {
		if s.plugin.ID == "" || s.plugin.Type == "" || strings.HasPrefix(s.plugin.Type, "csi") {
			return taskrunner.Fatal(fmt.Errorf("%s: a plugin needs a name and a type that is not CSI's", s.label))
		}
		return nil
	}
	// The ID is an element of mountDir, created by ensureDirs.
	if err := taskrunner.CheckPathElem("csi_plugin id", s.plugin.ID); err != nil {
		return taskrunner.Fatal(fmt.Errorf("csi_plugin: %w", err))
	}
	if s.types == nil {
		return taskrunner.Fatal(fmt.Errorf("csi_plugin %s: invalid type %q (want monolith, node or controller)", s.plugin.ID, s.plugin.Type))
	}
	return nil
}

// ensureDirs makes the plugin's mount and staging directories under the
// mount root. Plugin tasks write there (an exec plugin has its mount dir
// at mount_dir), so they are made beneath the root through no link.
func (s *supervisor) ensureDirs() error {
	if s.generic {
		return nil
	}
	if ensure := s.cfg.EnsureMountRoot; ensure != nil {
		if err := ensure(); err != nil {
			return fmt.Errorf("csi_plugin %s: %w", s.plugin.ID, err)
		}
	}
	if err := os.MkdirAll(s.cfg.MountRoot, 0o700); err != nil {
		return fmt.Errorf("csi_plugin %s: create mount root: %w", s.plugin.ID, err)
	}
	root, err := beneath.Open(s.cfg.MountRoot)
	if err != nil {
		return fmt.Errorf("csi_plugin %s: %w", s.plugin.ID, err)
	}
	defer root.Close()
	for _, d := range []string{s.mountDir, s.stageDir} {
		rel, err := filepath.Rel(s.cfg.MountRoot, d)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("csi_plugin %s: %s is not under the mount root %s", s.plugin.ID, d, s.cfg.MountRoot)
		}
		sub, err := root.MkdirAll(rel, 0o700)
		if err != nil {
			return fmt.Errorf("csi_plugin %s: create mount dir: %w", s.plugin.ID, err)
		}
		_ = sub.Close()
	}
	return nil
}

// Prestart checks the csi_plugin block, creates the plugin's mount dir and
// gives a raw_exec task CSI_ENDPOINT unless its job set one (Nomad #12050).
// The runner interpolates args after every prestart hook, so
// `--endpoint=${CSI_ENDPOINT}` sees it. go_plugin tasks get none: the sdk
// serves CSI on the go-plugin socket and ignores the variable there.
func (s *supervisor) Prestart(_ context.Context, req *taskrunner.HookRequest) error {
	if err := s.validate(); err != nil {
		return err
	}
	if err := s.ensureDirs(); err != nil {
		return err
	}
	s.stopSupervision()
	if s.goPlugin {
		return nil
	}
	if ep, ok := req.Env[sdk.EnvCSIEndpoint]; ok && ep != "" {
		if _, err := csi.SocketPath(ep); err != nil {
			return taskrunner.Fatal(fmt.Errorf("csi_plugin %s: task sets %s=%q: %w", s.plugin.ID, sdk.EnvCSIEndpoint, ep, err))
		}
		return nil
	}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	req.Env[sdk.EnvCSIEndpoint] = "unix://" + s.defaultSocket
	return nil
}

// Poststart starts the supervision of this launch and returns at once: the
// runner calls poststart hooks on its own goroutine before it watches the
// task, so waiting here for health_timeout would leave a task that exits,
// or a stop that arrives, unnoticed meanwhile.
func (s *supervisor) Poststart(ctx context.Context, req *taskrunner.HookRequest, task driver.Task) error {
	if err := s.validate(); err != nil {
		return err
	}
	sock, err := s.socketFor(req, task)
	if err != nil {
		return err
	}
	if req.Restored {
		// Prestart did not run for a re-adopted task.
		if err := s.ensureDirs(); err != nil {
			return err
		}
	}
	s.stopSupervision()
	sv := &supervision{
		s: s, task: task, socket: sock, restored: req.Restored,
		emit: req.Emit, restartTask: req.Restart,
		logger: s.logger.With("socket", sock),
		done:   make(chan struct{}),
	}
	// The runner's context ends when the agent shuts down (or the task is
	// killed), which ends the supervision without deregistering: the
	// registry keeps the registration in the store for the next agent.
	sctx, cancel := context.WithCancel(ctx)
	sv.cancel = cancel
	s.mu.Lock()
	s.cur = sv
	s.mu.Unlock()
	go sv.run(sctx)
	return nil
}

// socketFor says where this launch's CSI services are served.
func (s *supervisor) socketFor(req *taskrunner.HookRequest, task driver.Task) (string, error) {
	if s.goPlugin {
		h := task.Handle()
		if h == nil || h.SocketPath == "" {
			return "", fmt.Errorf("%s: go_plugin task has no plugin socket", s.label)
		}
		return h.SocketPath, nil
	}
	// A re-adopted task's environment is built again from its job by
	// the runner, as its launch built it (Prestart adds no endpoint when
	// the job sets one): the process's own environment is its to rewrite.
	ep := req.Env[sdk.EnvCSIEndpoint]
	if ep == "" {
		return s.defaultSocket, nil
	}
	p, err := csi.SocketPath(ep)
	if err != nil {
		return "", taskrunner.Fatal(fmt.Errorf("csi_plugin %s: %s=%q: %w", s.plugin.ID, sdk.EnvCSIEndpoint, ep, err))
	}
	return p, nil
}

// Exited ends the launch's supervision and deregisters this allocation.
// A task that died while the agent was down arrives here too, through the
// runner's restore path, and its registration restored from the store
// goes with it.
func (s *supervisor) Exited(_ context.Context, _ *taskrunner.HookRequest, _ *driver.ExitResult) error {
	s.stopSupervision()
	return s.deregister()
}

// Stop is Exited for a task stopped for good; it also removes the CSI
// socket the supervisor named, which its dead plugin left behind.
func (s *supervisor) Stop(_ context.Context, _ *taskrunner.HookRequest) error {
	s.stopSupervision()
	err := s.deregister()
	if !s.goPlugin && isSocket(s.defaultSocket) {
		if rerr := os.Remove(s.defaultSocket); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = csi.JoinErrors(err, fmt.Errorf("csi_plugin %s: remove socket: %w", s.plugin.ID, rerr))
		}
	}
	return err
}

// stopSupervision cancels the current supervision and waits for its
// goroutine, so that nothing registers after the caller deregisters.
func (s *supervisor) stopSupervision() {
	s.mu.Lock()
	sv := s.cur
	s.cur = nil
	s.mu.Unlock()
	if sv != nil {
		sv.cancel()
		<-sv.done
	}
}

// deregister removes this allocation's registrations, and only those: every
// call names the allocation ID. Missing ones are no-ops in the registry.
func (s *supervisor) deregister() error {
	var errs []error
	for _, typ := range s.types {
		s.cfg.Health.remove(typ, s.plugin.ID, s.allocID)
		if err := s.cfg.Registry.Deregister(typ, s.plugin.ID, s.allocID); err != nil && !errors.Is(err, dynamic.ErrShutdown) {
			errs = append(errs, fmt.Errorf("%s: deregister %s: %w", s.label, typ, err))
		}
	}
	return csi.JoinErrors(errs...)
}
