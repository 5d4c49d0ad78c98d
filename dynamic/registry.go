package dynamic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

var (
	// ErrShutdown is returned by every mutating call after Shutdown.
	ErrShutdown = errors.New("plugin registry is shut down")
	// ErrNotFound means no allocation of the plugin is registered.
	ErrNotFound = errors.New("plugin not found")
	// ErrNoDispenser means no DispenseFunc is set for the plugin type.
	ErrNoDispenser = errors.New("no dispenser for plugin type")
)

// Config is what New needs.
type Config struct {
	// Store persists every change. Nil means in memory only (a fresh
	// MemStore).
	Store Store
	// Dispensers maps a plugin type to its client factory. The map is
	// copied: the dispensers are fixed for the registry's life.
	Dispensers map[string]DispenseFunc
	// Logger is the parent logger; nil discards logs.
	Logger hclog.Logger
}

// Registry tracks every registered allocation of every plugin. It is safe
// for concurrent use. See the package documentation for its invariants.
type Registry struct {
	logger hclog.Logger
	store  Store

	// base is cancelled by Shutdown; subscriber goroutines and waiters
	// watch it.
	base context.Context
	stop context.CancelFunc
	// subs counts subscription goroutines (delivery and drain), so
	// Shutdown can wait for them.
	subs sync.WaitGroup

	mu         sync.RWMutex
	shut       bool
	plugins    map[string]map[string]*pluginSet // type → name → allocations
	feeds      map[string]*feed                 // type → event list
	dispensers map[string]DispenseFunc
	nextSeq    uint64
}

// allocEntry is one registered allocation. Its info is never modified once
// stored: an update replaces the pointer, so events and callers may share it.
type allocEntry struct {
	info       *PluginInfo
	prev, next *allocEntry
}

// pluginSet holds the allocations of one (type, name) in a list ordered by
// Seq, oldest first. New registrations always get the highest Seq, so they
// append at the tail, and the tail is the active instance: registering,
// deregistering and finding the successor are all O(1).
type pluginSet struct {
	allocs     map[string]*allocEntry
	head, tail *allocEntry
}

func (s *pluginSet) push(e *allocEntry) {
	e.prev, e.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = e
	} else {
		s.head = e
	}
	s.tail = e
	s.allocs[e.info.AllocID] = e
}

func (s *pluginSet) remove(e *allocEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = nil, nil
	delete(s.allocs, e.info.AllocID)
}

// New builds a registry and restores it from cfg.Store: every stored
// allocation is registered again without events, the one with the highest
// Seq per (type, name) active, and new registrations numbered after the
// highest stored Seq. Stored records that fail validation are logged and
// skipped but left in the store.
func New(cfg Config) (*Registry, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	store := cfg.Store
	if store == nil {
		store = NewMemStore()
	}
	r := &Registry{
		logger:     logger.Named("dynamic"),
		store:      store,
		plugins:    make(map[string]map[string]*pluginSet),
		feeds:      make(map[string]*feed),
		dispensers: maps.Clone(cfg.Dispensers),
		nextSeq:    1,
	}
	r.base, r.stop = context.WithCancel(context.Background())
	if r.dispensers == nil {
		r.dispensers = make(map[string]DispenseFunc)
	}
	records, err := store.Plugins()
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("restore plugin registry: %w", err)
	}
	r.restore(records)
	return r, nil
}

func (r *Registry) restore(records []*PluginInfo) {
	valid := make([]*PluginInfo, 0, len(records))
	for _, rec := range records {
		if err := rec.Validate(); err != nil {
			r.logger.Warn("skipping unusable stored plugin record", "error", err)
			continue
		}
		valid = append(valid, rec)
	}
	// The tie-breakers only run on ties: evaluating them eagerly (cmp.Or)
	// made sorting 100,000 records several times slower.
	slices.SortFunc(valid, func(a, b *PluginInfo) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		if c := a.RegisteredAt.Compare(b.RegisteredAt); c != 0 {
			return c
		}
		return cmp.Compare(a.AllocID, b.AllocID)
	})
	restored := 0
	for _, info := range valid {
		set := r.setLocked(info.Type, info.Name, true)
		// A keyed store cannot hold duplicates, but a buggy one could; in
		// Seq order the later record is the one that was current.
		if old, dup := set.allocs[info.AllocID]; dup {
			set.remove(old)
			restored--
		}
		set.push(&allocEntry{info: info})
		restored++
		r.nextSeq = max(r.nextSeq, info.Seq+1)
	}
	if len(records) > 0 {
		r.logger.Debug("restored plugins", "allocations", restored, "skipped", len(records)-restored)
	}
}

// setLocked returns the allocations of (pluginType, name), creating the set
// if create is true. The caller holds the write lock if create is true.
func (r *Registry) setLocked(pluginType, name string, create bool) *pluginSet {
	byName, ok := r.plugins[pluginType]
	if !ok {
		if !create {
			return nil
		}
		byName = make(map[string]*pluginSet)
		r.plugins[pluginType] = byName
	}
	s, ok := byName[name]
	if !ok && create {
		s = &pluginSet{allocs: make(map[string]*allocEntry)}
		byName[name] = s
	}
	return s
}

// Register adds an allocation of a plugin, or refreshes it if it is already
// registered. A new allocation becomes the active instance of its plugin; the
// previous ones stay registered behind it. The same allocation registered
// again with identical info is a no-op; with changed info it is updated in
// place, keeping its Seq, RegisteredAt and active status. Seq and
// RegisteredAt in info are ignored. The change is in the Store before
// Register returns; if the Store fails nothing changes.
func (r *Registry) Register(info *PluginInfo) error { return r.RegisterAll(info) }

// RegisterAll is Register for several plugins at once: every change is
// written to the Store in one step, and either all of them take effect or
// none does. The CSI supervisor registers a monolith's node and controller
// halves this way, so that no store error and no crash of the agent can
// leave half of a monolith registered, and the halves cost one commit.
// Events go out in argument order. The same (type, name, allocation) twice
// in one call is an ErrInvalid error.
func (r *Registry) RegisterAll(infos ...*PluginInfo) error {
	seen := make(map[pluginKey]bool, len(infos))
	for _, info := range infos {
		if err := info.Validate(); err != nil {
			return fmt.Errorf("register plugin: %w", err)
		}
		k := pluginKey{info.Type, info.Name, info.AllocID}
		if seen[k] {
			return fmt.Errorf("register plugin: %w: %s plugin %q alloc %s given twice", ErrInvalid, info.Type, info.Name, info.AllocID)
		}
		seen[k] = true
	}
	if len(infos) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return fmt.Errorf("register %s: %w", describeAll(infos), ErrShutdown)
	}

	// Work out every change first; nothing in memory moves until the
	// store has all of them.
	type change struct {
		rec *PluginInfo
		// existing is the entry an update replaces the info of; nil for
		// a new allocation.
		existing *allocEntry
		set      *pluginSet
	}
	changes := make([]change, 0, len(infos))
	recs := make([]*PluginInfo, 0, len(infos))
	seq, now := r.nextSeq, time.Now()
	for _, info := range infos {
		set := r.setLocked(info.Type, info.Name, false)
		if set != nil {
			if e, ok := set.allocs[info.AllocID]; ok {
				if sameRegistration(e.info, info) {
					continue
				}
				updated := info.Copy()
				updated.Seq = e.info.Seq
				updated.RegisteredAt = e.info.RegisteredAt
				changes = append(changes, change{rec: updated, existing: e, set: set})
				recs = append(recs, updated)
				continue
			}
		}
		added := info.Copy()
		added.Seq = seq
		seq++
		added.RegisteredAt = now
		changes = append(changes, change{rec: added})
		recs = append(recs, added)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := r.store.PutPlugins(recs...); err != nil {
		return fmt.Errorf("register %s: persist: %w", describeAll(infos), err)
	}
	r.nextSeq = seq

	for _, c := range changes {
		p := c.rec
		if c.existing != nil {
			c.existing.info = p
			active := c.set.tail == c.existing
			r.feedLocked(p.Type).publish(EventUpdated, p, active)
			r.logger.Debug("plugin updated", "type", p.Type, "name", p.Name, "alloc_id", p.AllocID,
				"version", p.Version, "active", active)
			continue
		}
		r.setLocked(p.Type, p.Name, true).push(&allocEntry{info: p})
		r.feedLocked(p.Type).publish(EventRegistered, p, true)
		r.logger.Debug("plugin registered", "type", p.Type, "name", p.Name, "alloc_id", p.AllocID,
			"version", p.Version, "seq", p.Seq)
	}
	return nil
}

// describeAll names the registrations of one RegisterAll call for errors:
// "csi-node, csi-controller plugin "x" alloc A" when they share name and
// allocation, as a monolith's do.
func describeAll(infos []*PluginInfo) string {
	same := true
	types := make([]string, 0, len(infos))
	for _, p := range infos {
		types = append(types, p.Type)
		same = same && p.Name == infos[0].Name && p.AllocID == infos[0].AllocID
	}
	if same {
		return fmt.Sprintf("%s plugin %q alloc %s", strings.Join(types, ", "), infos[0].Name, infos[0].AllocID)
	}
	parts := make([]string, 0, len(infos))
	for _, p := range infos {
		parts = append(parts, fmt.Sprintf("%s plugin %q alloc %s", p.Type, p.Name, p.AllocID))
	}
	return strings.Join(parts, "; ")
}

// cleanupSetLocked drops the maps of (pluginType, name) once they hold
// nothing, so that churn through many plugin names does not leak.
func (r *Registry) cleanupSetLocked(pluginType, name string) {
	byName := r.plugins[pluginType]
	if s, ok := byName[name]; ok && len(s.allocs) == 0 {
		delete(byName, name)
	}
	if byName != nil && len(byName) == 0 {
		delete(r.plugins, pluginType)
	}
}

// Deregister removes exactly one allocation. If it was the active instance,
// the most recent remaining allocation takes over at once: subscribers get a
// Deregistered event for the removed allocation followed by an Activated
// event for its successor. Deregistering an allocation that is not
// registered (a plugin that failed before it registered) is a no-op that
// emits nothing. An empty argument is an ErrInvalid error naming it. If the
// Store fails, nothing changes.
func (r *Registry) Deregister(pluginType, name, allocID string) error {
	switch {
	case pluginType == "":
		return fmt.Errorf("deregister plugin: %w: missing Type", ErrInvalid)
	case name == "":
		return fmt.Errorf("deregister plugin: %w: missing Name", ErrInvalid)
	case allocID == "":
		return fmt.Errorf("deregister plugin: %w: missing AllocID", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return fmt.Errorf("deregister %s plugin %q alloc %s: %w", pluginType, name, allocID, ErrShutdown)
	}
	set := r.setLocked(pluginType, name, false)
	if set == nil {
		return nil
	}
	e, ok := set.allocs[allocID]
	if !ok {
		return nil
	}
	if err := r.store.DeletePlugin(pluginType, name, allocID); err != nil {
		return fmt.Errorf("deregister %s plugin %q alloc %s: persist: %w", pluginType, name, allocID, err)
	}
	wasActive := set.tail == e
	set.remove(e)
	f := r.feedLocked(pluginType)
	f.publish(EventDeregistered, e.info, false)
	r.logger.Debug("plugin deregistered", "type", pluginType, "name", name, "alloc_id", allocID, "was_active", wasActive)
	if wasActive && set.tail != nil {
		f.publish(EventActivated, set.tail.info, true)
		r.logger.Debug("plugin activated", "type", pluginType, "name", name, "alloc_id", set.tail.info.AllocID)
	}
	r.cleanupSetLocked(pluginType, name)
	return nil
}

// List returns a copy of the active instance of every plugin of pluginType,
// sorted by name.
func (r *Registry) List(pluginType string) []*PluginInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listLocked(pluginType)
}

func (r *Registry) listLocked(pluginType string) []*PluginInfo {
	byName := r.plugins[pluginType]
	out := make([]*PluginInfo, 0, len(byName))
	for _, s := range byName {
		out = append(out, s.tail.info.Copy())
	}
	slices.SortFunc(out, func(a, b *PluginInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Types returns every plugin type with at least one registration, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.plugins))
	for t, byName := range r.plugins {
		if len(byName) > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// ListAllocs returns a copy of every registered allocation of pluginType,
// active or not, sorted by name and then by Seq (so the last of each name is
// the active one).
func (r *Registry) ListAllocs(pluginType string) []*PluginInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*PluginInfo
	for _, s := range r.plugins[pluginType] {
		for e := s.head; e != nil; e = e.next {
			out = append(out, e.info.Copy())
		}
	}
	slices.SortFunc(out, func(a, b *PluginInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

// ForAlloc returns a copy of one allocation's info, active or not.
func (r *Registry) ForAlloc(pluginType, name, allocID string) (*PluginInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s := r.setLocked(pluginType, name, false); s != nil {
		if e, ok := s.allocs[allocID]; ok {
			return e.info.Copy(), true
		}
	}
	return nil, false
}

// Active returns a copy of the active instance of a plugin.
func (r *Registry) Active(pluginType, name string) (*PluginInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.activeLocked(pluginType, name)
}

func (r *Registry) activeLocked(pluginType, name string) (*PluginInfo, bool) {
	if s := r.setLocked(pluginType, name, false); s != nil {
		return s.tail.info.Copy(), true
	}
	return nil, false
}

// ActiveAndStandby returns copies of a plugin's active instance and of its
// standby, the instance that becomes active if the active one leaves (the
// newest registration before it), read together; nil where there is none.
// Consumers keep a connection to the standby ready, so that losing the
// active instance costs them a switch, not a connect.
func (r *Registry) ActiveAndStandby(pluginType, name string) (active, standby *PluginInfo) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.setLocked(pluginType, name, false)
	if s == nil {
		return nil, nil
	}
	if s.tail.prev != nil {
		standby = s.tail.prev.info.Copy()
	}
	return s.tail.info.Copy(), standby
}

// Shutdown closes every subscription and makes Register and Deregister fail
// with ErrShutdown. It returns once every subscriber goroutine has exited.
// It is idempotent and safe to call concurrently with anything. The Store is
// not closed: it belongs to whoever passed it in.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	if !r.shut {
		r.shut = true
		r.stop()
		r.logger.Debug("plugin registry shut down")
	}
	r.mu.Unlock()
	r.subs.Wait()
}
