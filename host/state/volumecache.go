package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi"
)

// volumeCache keeps each volume's last decoded record with the bytes it was
// decoded from. A read still goes to bbolt for the bytes (a lookup in the
// mmap, no copy), and decodes only when they differ from the cached ones;
// otherwise it hands out a clone. Keyed by content, the cache needs no
// invalidation: a write in any transaction, committed or rolled back,
// changes what the next read finds in the file, and bytes that were never
// committed only ever map to their own decoding. Decoding was a tenth of
// the agent's CPU under volume load (BenchmarkVolumes100), where every
// pass and every request reads its record.
//
// Deletes are the exception: a reader whose snapshot predates a delete
// still finds the old bytes and would cache them after DeleteVolume's
// forget, keeping an entry for a volume that is gone, and that nobody
// reads again, for the agent's life. So a delete raises floor to its
// transaction's ID before it commits, and a read from an older snapshot
// decodes without caching.
type volumeCache struct {
	mu    sync.Mutex
	m     map[string]cachedVolume
	floor int // no entry is cached from a read transaction older than this
}

type cachedVolume struct {
	raw []byte
	v   *csi.Volume
}

// get returns volume id as stored in raw (the bucket's value, valid for the
// read's transaction only), decoding it only when raw is new; txID is the
// read transaction's ID.
func (c *volumeCache) get(txID int, id string, raw []byte) (*csi.Volume, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && bytes.Equal(e.raw, raw) {
		return e.v.Clone(), nil
	}
	v := new(csi.Volume)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%w: decode %q: %w", ErrCorrupt, id, err)
	}
	c.mu.Lock()
	if txID >= c.floor {
		if c.m == nil {
			c.m = make(map[string]cachedVolume)
		}
		c.m[id] = cachedVolume{raw: bytes.Clone(raw), v: v}
	}
	c.mu.Unlock()
	return v.Clone(), nil
}

// deleting is called by a write transaction (ID txID) that deletes a
// volume, before it commits: reads from older snapshots, which may still
// see the volume, no longer cache.
func (c *volumeCache) deleting(txID int) {
	c.mu.Lock()
	c.floor = max(c.floor, txID)
	c.mu.Unlock()
}

// forget drops a volume that is gone.
func (c *volumeCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// readVolume reads volume id in tx, through the cache.
func (c *volumeCache) read(tx *bbolt.Tx, id string) (*csi.Volume, error) {
	raw := tx.Bucket([]byte(bucketVolumes)).Get([]byte(id))
	if raw == nil {
		c.forget(id)
		return nil, fmt.Errorf("volume %q: %w", id, csi.ErrVolumeNotFound)
	}
	v, err := c.get(tx.ID(), id, raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("volume %s: %w", id, err)
	case v.ID != id:
		return nil, fmt.Errorf("%w: volume record %s holds volume %q", ErrCorrupt, id, v.ID)
	}
	return v, nil
}
