package plugins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
)

// Manager defaults.
const (
	DefaultFingerprintInterval = 30 * time.Second
	DefaultFingerprintTimeout  = 30 * time.Second
)

var (
	// ErrNotStarted is returned by WaitReady before Start.
	ErrNotStarted = errors.New("csi manager not started")
	// ErrManagerShutdown is returned by Start and WaitReady after Shutdown.
	ErrManagerShutdown = errors.New("csi manager shut down")
	// ErrUnknownPlugin is returned for a plugin ID the manager does not know.
	ErrUnknownPlugin = errors.New("unknown CSI plugin")
)

// Registry is what the Manager needs from the plugin registry;
// *dynamic.Registry implements it.
type Registry interface {
	// Watch returns the active instances of a type and, atomically, a
	// subscription to every later change.
	Watch(ctx context.Context, pluginType string) ([]*dynamic.PluginInfo, <-chan *dynamic.Event)
	// List returns the active instance of every plugin of a type.
	List(pluginType string) []*dynamic.PluginInfo
	// Active returns the active instance of one plugin.
	Active(pluginType, name string) (*dynamic.PluginInfo, bool)
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Registry Registry
	// Logger is the parent logger; the manager names its own "csi".
	Logger hclog.Logger
	// FingerprintInterval is the time between health fingerprints of an
	// allocation. Zero means DefaultFingerprintInterval.
	FingerprintInterval time.Duration
	// FingerprintTimeout bounds one fingerprint, retries included. Zero
	// means DefaultFingerprintTimeout.
	FingerprintTimeout time.Duration
	// Client configures the CSI clients (timeouts, retry policy). Endpoint
	// and Logger are ignored: each allocation has its own socket.
	Client csi.ClientConfig
	// OnHealthChange, if set, is called when an allocation's first
	// fingerprint finishes, when its health flips, and when Shutdown
	// marks it unhealthy. It is called from several goroutines, never
	// with a manager lock held, and should return quickly: a slow callback
	// delays that allocation's next fingerprint.
	OnHealthChange func(HealthEvent)
}

// instanceKey names the slot of one plugin of one type: at most one
// allocation, the registry's active one, fills it at a time.
type instanceKey struct {
	typ, name string
}

// Manager follows the registry's CSI plugins and keeps one instance
// manager, and so one fingerprint, per active allocation of each plugin and
// type. See the package documentation for its lifecycle.
type Manager struct {
	cfg    ManagerConfig
	logger hclog.Logger

	ctx    context.Context // ends at Shutdown; parent of all instances
	cancel context.CancelFunc
	done   chan struct{} // closed when the follower goroutine exits

	mu        sync.Mutex
	started   bool
	shut      bool
	instances map[instanceKey]*instanceManager
	clients   *clientPool
	// changed is closed, and replaced, whenever an instance is added,
	// removed or fingerprinted: WaitReady waits on it.
	changed chan struct{}
}

// NewManager checks cfg and returns a manager that does nothing until Start.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Registry == nil {
		return nil, errors.New("csi manager: no registry")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.FingerprintInterval <= 0 {
		cfg.FingerprintInterval = DefaultFingerprintInterval
	}
	if cfg.FingerprintTimeout <= 0 {
		cfg.FingerprintTimeout = DefaultFingerprintTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger := cfg.Logger.Named("csi")
	return &Manager{
		cfg:       cfg,
		logger:    logger,
		clients:   newClientPool(cfg.Client, logger),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		instances: make(map[instanceKey]*instanceManager),
		changed:   make(chan struct{}),
	}, nil
}

// followed are the registry types the manager follows.
var followed = [...]string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}

// Start subscribes to the registry, starts an instance manager for every
// plugin already registered (restored after an agent restart) and then
// follows the registry's events. Every new instance is fingerprinted at
// once. Start does not block; Shutdown stops everything it started.
func (m *Manager) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.shut:
		return ErrManagerShutdown
	case m.started:
		return errors.New("csi manager already started")
	}
	m.started = true
	var feeds [len(followed)]<-chan *dynamic.Event
	for i, t := range followed {
		active, events := m.cfg.Registry.Watch(m.ctx, t)
		feeds[i] = events
		for _, info := range active {
			m.replaceLocked(info)
		}
	}
	m.broadcastLocked()
	go m.follow(feeds[0], feeds[1])
	return nil
}

// follow applies registry events until Shutdown. Events of one type arrive
// in registry order, which is all correctness needs: controller and node
// slots are independent.
func (m *Manager) follow(controllers, nodes <-chan *dynamic.Event) {
	defer close(m.done)
	for controllers != nil || nodes != nil {
		var ev *dynamic.Event
		var ok bool
		select {
		case <-m.ctx.Done():
			return
		case ev, ok = <-controllers:
			if !ok {
				controllers = nil
				continue
			}
		case ev, ok = <-nodes:
			if !ok {
				nodes = nil
				continue
			}
		}
		m.apply(ev)
	}
	// Both feeds closed without our Shutdown: the registry shut down first.
	// Instances keep fingerprinting what they have until Shutdown.
	m.logger.Debug("registry closed its event feeds")
}

// apply updates the slot an event is about. Stopping a replaced instance
// waits for its goroutine, so it happens outside the lock.
func (m *Manager) apply(ev *dynamic.Event) {
	if ev == nil || ev.Info == nil {
		return
	}
	info := ev.Info
	m.logger.Debug("registry event", "event", ev.Type, "type", info.Type, "plugin", info.Name, "alloc", info.AllocID, "active", ev.Active)
	var old *instanceManager
	reason := "deregistered"
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return
	}
	key := instanceKey{info.Type, info.Name}
	cur := m.instances[key]
	switch ev.Type {
	case dynamic.EventRegistered, dynamic.EventActivated, dynamic.EventUpdated:
		if !ev.Active {
			break
		}
		reason = "replaced by alloc " + info.AllocID
		if cur != nil && cur.info().AllocID == info.AllocID {
			reason = "registration updated"
		}
		old = m.replaceLocked(info)
	case dynamic.EventDeregistered:
		if cur != nil && cur.info().AllocID == info.AllocID {
			delete(m.instances, key)
			old = cur
		}
	}
	m.broadcastLocked()
	m.mu.Unlock()
	if old != nil {
		old.stop(reason, false)
		m.notifyChanged()
	}
}

// Lend offers an open connection to a plugin's socket for the manager to
// fingerprint over, instead of dialing one of its own, until withdraw is
// called. The CSI supervisor lends a go_plugin task's go-plugin connection
// before it registers the plugin, so that the fingerprint the registration
// triggers starts without a connection set-up. The caller keeps ownership:
// it must withdraw before closing conn (an instance still using a closed
// connection reports the plugin unhealthy until it is stopped).
func (m *Manager) Lend(socket string, conn grpc.ClientConnInterface) (withdraw func()) {
	return m.clients.lend(socket, conn)
}

// replaceLocked starts an instance for info in its slot and returns the one
// it displaced, which the caller must stop outside the lock.
func (m *Manager) replaceLocked(info *dynamic.PluginInfo) *instanceManager {
	key := instanceKey{info.Type, info.Name}
	old := m.instances[key]
	var standIn *Fingerprint
	if old != nil && old.info().AllocID != info.AllocID {
		if fp := old.fingerprint(); fp.Healthy {
			standIn = fp
		}
	}
	im := newInstanceManager(instanceConfig{
		info:     info.Copy(),
		logger:   m.logger,
		interval: m.cfg.FingerprintInterval,
		timeout:  m.cfg.FingerprintTimeout,
		acquire:  m.clients.acquire,
		onUpdate: m.instanceUpdated,
		standIn:  standIn,
	})
	m.instances[key] = im
	im.start(m.ctx)
	m.logger.Info("fingerprinting CSI plugin", "type", info.Type, "plugin", info.Name, "alloc", info.AllocID)
	return old
}

// instanceUpdated is every instance's onUpdate hook.
func (m *Manager) instanceUpdated(prev, cur *Fingerprint, announce bool) {
	m.notifyChanged()
	if !announce || m.cfg.OnHealthChange == nil {
		return
	}
	if ev, ok := healthEventFor(prev, cur); ok {
		m.cfg.OnHealthChange(ev)
	}
}

func (m *Manager) notifyChanged() {
	m.mu.Lock()
	m.broadcastLocked()
	m.mu.Unlock()
}

func (m *Manager) broadcastLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Shutdown stops following the registry, stops every instance manager and
// records a final unhealthy fingerprint ("agent shutting down") for each,
// reported through OnHealthChange. The final states stay readable through
// Plugins. It returns once every goroutine the manager started has exited,
// or with ctx's error if ctx ends first (the goroutines still exit).
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return nil
	}
	m.shut = true
	started := m.started
	m.cancel()
	instances := make([]*instanceManager, 0, len(m.instances))
	for _, im := range m.instances {
		instances = append(instances, im)
	}
	m.broadcastLocked()
	m.mu.Unlock()

	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if started {
			<-m.done
		}
		var wg sync.WaitGroup
		for _, im := range instances {
			wg.Go(func() { im.stop("agent shutting down", true) })
		}
		wg.Wait()
	}()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("csi manager shutdown: %w", ctx.Err())
	}
}

// snapshot returns the current instances.
func (m *Manager) snapshot() []*instanceManager {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*instanceManager, 0, len(m.instances))
	for _, im := range m.instances {
		out = append(out, im)
	}
	return out
}

// Plugins returns the status of every plugin the manager fingerprints,
// sorted by ID.
func (m *Manager) Plugins() []*PluginStatus {
	instances := m.snapshot()
	fps := make([]*Fingerprint, 0, len(instances))
	for _, im := range instances {
		fps = append(fps, im.fingerprint())
	}
	return buildStatuses(fps)
}

// Plugin returns the status of one plugin.
func (m *Manager) Plugin(id string) (*PluginStatus, bool) {
	var fps []*Fingerprint
	for _, im := range m.snapshot() {
		if im.info().Name == id {
			fps = append(fps, im.fingerprint())
		}
	}
	if len(fps) == 0 {
		return nil, false
	}
	return buildStatuses(fps)[0], true
}

// PluginSummary is Plugin without Allocations: the provider, counts and
// health, read under each instance's lock instead of copying every
// fingerprint. The agent shows them with every volume, in every API answer
// and event about it, where copying the fingerprints was a sixth of all it
// allocated under volume load.
func (m *Manager) PluginSummary(id string) (*PluginStatus, bool) {
	s := &PluginStatus{ID: id}
	found := false
	for _, im := range m.snapshot() {
		if im.info().Name == id {
			found = true
			im.withFingerprint(s.count)
		}
	}
	return s, found
}

// Client returns the client of the active allocation of plugin id and type
// (dynamic.PluginTypeCSIController or dynamic.PluginTypeCSINode), for the
// volume code. The manager owns it: callers must not Close it. Take it per
// operation rather than keeping it, since it is closed when its allocation
// is replaced or deregistered (calls then fail with CANCELED).
func (m *Manager) Client(id, pluginType string) (*csi.Client, error) {
	m.mu.Lock()
	im := m.instances[instanceKey{pluginType, id}]
	m.mu.Unlock()
	if im == nil {
		return nil, fmt.Errorf("csi %s plugin %q: %w", pluginType, id, ErrUnknownPlugin)
	}
	if im.fpr.client == nil {
		return nil, fmt.Errorf("csi %s plugin %q alloc %s: %w", pluginType, id, im.info().AllocID, im.fpr.clientErr)
	}
	return im.fpr.client, nil
}

// WaitReady returns once every CSI plugin allocation that is active in the
// registry at the time of the call has finished its first fingerprint,
// successful or not, or has stopped being active. The agent calls it after
// a restart so that it reports "ready" only when restored plugins are
// usable, instead of failing volume claims with "plugin not found" as
// Nomad did (#7200). It wakes on state changes, never on a timer.
func (m *Manager) WaitReady(ctx context.Context) error {
	var want []*dynamic.PluginInfo
	for _, t := range followed {
		want = append(want, m.cfg.Registry.List(t)...)
	}
	for {
		m.mu.Lock()
		changed, started, shut := m.changed, m.started, m.shut
		m.mu.Unlock()
		switch {
		case shut:
			return fmt.Errorf("csi wait ready: %w", ErrManagerShutdown)
		case !started:
			return fmt.Errorf("csi wait ready: %w", ErrNotStarted)
		}
		want = m.pending(want)
		if len(want) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			names := make([]string, 0, len(want))
			for _, w := range want {
				names = append(names, fmt.Sprintf("%s (%s, alloc %s)", w.Name, w.Type, w.AllocID))
			}
			return fmt.Errorf("csi wait ready: still fingerprinting %s: %w", strings.Join(names, ", "), ctx.Err())
		}
	}
}

// pending filters want down to the allocations still worth waiting for.
func (m *Manager) pending(want []*dynamic.PluginInfo) []*dynamic.PluginInfo {
	out := want[:0]
	for _, w := range want {
		m.mu.Lock()
		im := m.instances[instanceKey{w.Type, w.Name}]
		m.mu.Unlock()
		if im != nil && im.info().AllocID == w.AllocID {
			// The manager follows the registry, so an instance for this
			// allocation means it is still the active one: no registry
			// lookup (a copy of the info) per pending plugin per wake-up.
			if !im.fingerprintDone() {
				out = append(out, w)
			}
			continue
		}
		if a, ok := m.cfg.Registry.Active(w.Type, w.Name); !ok || a.AllocID != w.AllocID {
			continue
		}
		out = append(out, w)
	}
	return out
}
