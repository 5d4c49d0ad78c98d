package supervisor

import (
	"sync"
	"time"
)

// A CSI plugin's health is the CSI manager's to know: it fingerprints the
// active instances on its own. A generic plugin has nobody but its
// supervision asking it, so the supervision's latest answer is the only
// health there is; the HealthTable keeps it where `plugin status` and the
// metrics can read it.

// Health is a generic plugin allocation's latest health check.
type Health struct {
	Type, Name, AllocID string
	Healthy             bool
	// Description is "healthy" or what the latest check said was wrong.
	Description string
	CheckedAt   time.Time
}

type healthKey struct{ typ, name, allocID string }

// HealthTable holds the latest health check of every supervised generic
// plugin allocation, from its first check until it is deregistered. The
// zero value is not usable; create it with NewHealthTable. It is safe for
// concurrent use.
type HealthTable struct {
	mu sync.Mutex
	m  map[healthKey]Health
}

// NewHealthTable returns an empty table.
func NewHealthTable() *HealthTable { return &HealthTable{m: map[healthKey]Health{}} }

// Get is the latest check of one allocation of a plugin.
func (t *HealthTable) Get(typ, name, allocID string) (Health, bool) {
	if t == nil {
		return Health{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.m[healthKey{typ, name, allocID}]
	return h, ok
}

func (t *HealthTable) set(h Health) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.m[healthKey{h.Type, h.Name, h.AllocID}] = h
	t.mu.Unlock()
}

func (t *HealthTable) remove(typ, name, allocID string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.m, healthKey{typ, name, allocID})
	t.mu.Unlock()
}
