package dynamic

import (
	"context"
	"fmt"
)

// WaitForPlugin returns the active instance of a plugin as soon as there is
// one: at once if it is registered, else when the event that activates it is
// published. It returns ctx's error wrapped when ctx ends first, and
// ErrShutdown when the registry shuts down first.
func (r *Registry) WaitForPlugin(ctx context.Context, pluginType, name string) (*PluginInfo, error) {
	r.mu.RLock()
	info, ok := r.activeLocked(pluginType, name)
	shut := r.shut
	r.mu.RUnlock()
	if ok {
		return info, nil
	}
	if shut {
		return nil, fmt.Errorf("wait for %s plugin %q: %w", pluginType, name, ErrShutdown)
	}

	// Check again and join the feed under the write lock, so that no
	// registration can fall between the check and the wait.
	r.mu.Lock()
	if info, ok := r.activeLocked(pluginType, name); ok {
		r.mu.Unlock()
		return info, nil
	}
	if r.shut {
		r.mu.Unlock()
		return nil, fmt.Errorf("wait for %s plugin %q: %w", pluginType, name, ErrShutdown)
	}
	cur := r.feedLocked(pluginType).tail
	r.mu.Unlock()

	// Walk the feed in the caller's goroutine: no subscription to clean up.
	for {
		select {
		case <-cur.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s plugin %q: %w", pluginType, name, ctx.Err())
		case <-r.base.Done():
			return nil, fmt.Errorf("wait for %s plugin %q: %w", pluginType, name, ErrShutdown)
		}
		cur = cur.next
		if cur.ev.Active && cur.ev.Info.Name == name {
			return cur.ev.Info.Copy(), nil
		}
	}
}
