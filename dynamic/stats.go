package dynamic

// TypeStats is a point-in-time view of one plugin type in the registry, for
// metrics. The agent reads it when it is scraped: the registry keeps
// counters, not a metrics library.
type TypeStats struct {
	// Plugins counts the plugin names with at least one allocation;
	// Allocations counts every registered allocation (active or not).
	Plugins, Allocations int
	// Events counts the events published since the registry was built
	// (restored registrations publish none), by type.
	Events map[EventType]uint64
}

// EventTypes lists every EventType, in order.
var EventTypes = [...]EventType{EventRegistered, EventUpdated, EventDeregistered, EventActivated}

// Stats reports every plugin type the registry has seen: types whose
// plugins are all gone are still listed (with their event counts), so a
// counter never goes backwards.
func (r *Registry) Stats() map[string]TypeStats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string]TypeStats, len(r.feeds)+len(r.plugins))
	for typ, names := range r.plugins {
		ts := TypeStats{Plugins: len(names)}
		for _, set := range names {
			ts.Allocations += len(set.allocs)
		}
		out[typ] = ts
	}
	for typ, f := range r.feeds {
		ts := out[typ]
		ts.Events = make(map[EventType]uint64, len(EventTypes))
		for _, et := range EventTypes {
			ts.Events[et] = f.published[et]
		}
		out[typ] = ts
	}
	return out
}
