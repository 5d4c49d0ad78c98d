package dynamic

import (
	"errors"
	"sync"
)

// MemStore is a Store that keeps records in memory: for tests, and for an
// agent run without a data dir. The zero value is ready to use. It copies on
// the way in and out, so neither the registry nor a test can alias its
// records.
type MemStore struct {
	mu      sync.Mutex
	records map[pluginKey]*PluginInfo
}

// pluginKey identifies one allocation of one plugin.
type pluginKey struct {
	typ, name, alloc string
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

// PutPlugins implements Store.
func (s *MemStore) PutPlugins(infos ...*PluginInfo) error {
	for _, info := range infos {
		if info == nil {
			return errors.New("memstore: put nil plugin info")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = make(map[pluginKey]*PluginInfo)
	}
	for _, info := range infos {
		s.records[pluginKey{info.Type, info.Name, info.AllocID}] = info.Copy()
	}
	return nil
}

// DeletePlugin implements Store.
func (s *MemStore) DeletePlugin(pluginType, name, allocID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, pluginKey{pluginType, name, allocID})
	return nil
}

// Plugins implements Store.
func (s *MemStore) Plugins() ([]*PluginInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*PluginInfo, 0, len(s.records))
	for _, p := range s.records {
		out = append(out, p.Copy())
	}
	return out, nil
}

// Len returns the number of stored records.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}
