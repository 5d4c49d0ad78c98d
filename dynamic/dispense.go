package dynamic

import "fmt"

// DispenseFunc turns the active instance of a plugin into a client. It runs
// without any registry lock held, so it may dial.
type DispenseFunc func(info *PluginInfo) (any, error)

// Dispense returns a client for the active instance of a plugin, made by its
// type's DispenseFunc.
func (r *Registry) Dispense(pluginType, name string) (any, error) {
	r.mu.RLock()
	shut := r.shut
	info, found := r.activeLocked(pluginType, name)
	fn := r.dispensers[pluginType]
	r.mu.RUnlock()
	switch {
	case shut:
		return nil, fmt.Errorf("dispense %s plugin %q: %w", pluginType, name, ErrShutdown)
	case !found:
		return nil, fmt.Errorf("dispense %s plugin %q: %w", pluginType, name, ErrNotFound)
	case fn == nil:
		return nil, fmt.Errorf("dispense %s plugin %q: %w %q", pluginType, name, ErrNoDispenser, pluginType)
	}
	client, err := fn(info)
	if err != nil {
		return nil, fmt.Errorf("dispense %s plugin %q alloc %s: %w", pluginType, name, info.AllocID, err)
	}
	return client, nil
}
