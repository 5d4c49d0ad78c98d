package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi"
)

// volumeCache keeps each volume's last decoded record with the bytes it was
// decoded from. A read still goes to bbolt for the bytes (a lookup in the
// mmap, no copy), and decodes only when they differ from the cached ones;
// otherwise it hands out a clone. Keyed by content, the cache needs no
// invalidation: a write in any transaction, committed or rolled back,
// changes what the next read finds in the file, and bytes that were never
// committed only ever map to their own decoding. PutVolume fills it with
// what it wrote, so the read after a write does not decode either (wrote).
// Decoding was a tenth of the agent's CPU under volume load
// (BenchmarkVolumes100), where every pass and every request reads its
// record.
//
// Deletes are the exception: a reader whose snapshot predates a delete
// still finds the old bytes and would cache them after DeleteVolume's
// forget, keeping an entry for a volume that is gone, and that nobody
// reads again, for the agent's life. So a delete raises floor to its
// transaction's ID before it commits, and neither a read from an older
// snapshot nor a write from that transaction or an older one is cached.
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
// read transaction's ID. A nil cache decodes every time (a Tx made outside
// DB.Update).
func (c *volumeCache) get(txID int, id string, raw []byte) (*csi.Volume, error) {
	if c != nil {
		c.mu.Lock()
		e, ok := c.m[id]
		c.mu.Unlock()
		if ok && bytes.Equal(e.raw, raw) {
			return e.v.Clone(), nil
		}
	}
	v := new(csi.Volume)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%w: decode %q: %w", ErrCorrupt, id, err)
	}
	if c == nil {
		return v, nil
	}
	// A read transaction's ID is the last commit it sees: one equal to
	// the floor sees the delete.
	c.put(id, bytes.Clone(raw), v, func(floor int) bool { return txID >= floor })
	return v.Clone(), nil
}

// wrote records what PutVolume wrote in transaction txID: raw, which the
// cache takes, encodes v, which the caller keeps. The entry holds what a
// decode of raw would give: a clone of v whose times went through JSON, the
// only fields a decode does not give back as they were (time.Now carries a
// monotonic reading and the Local location; a decode carries neither).
// TestVolumeCacheWriteEqualsDecode fills every field of a volume to check
// that no other field differs.
func (c *volumeCache) wrote(txID int, id string, raw []byte, v *csi.Volume) {
	d := v.Clone()
	d.CreateTime, d.ModifyTime = viaJSON(d.CreateTime), viaJSON(d.ModifyTime)
	for _, cl := range d.Claims {
		if cl != nil {
			cl.CreateTime, cl.ModifyTime = viaJSON(cl.CreateTime), viaJSON(cl.ModifyTime)
		}
	}
	// A write transaction's ID is its own: one equal to the floor holds
	// the delete, which may have come after this write.
	c.put(id, raw, d, func(floor int) bool { return txID > floor })
}

// viaJSON is t as a JSON round trip gives it back.
func viaJSON(t time.Time) time.Time {
	b, err := t.MarshalJSON()
	if err != nil {
		return t // out of JSON's range: the encode of the record failed first
	}
	var out time.Time
	if err := out.UnmarshalJSON(b); err != nil {
		return t
	}
	return out
}

// put caches raw (which the cache owns) as decoding to v (likewise) if
// newer says the bytes are as new as the last delete's floor. It decides
// under the lock that deleting takes, so no delete can slip in between.
func (c *volumeCache) put(id string, raw []byte, v *csi.Volume, newer func(floor int) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !newer(c.floor) {
		return
	}
	if c.m == nil {
		c.m = make(map[string]cachedVolume)
	}
	c.m[id] = cachedVolume{raw: raw, v: v}
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
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// read reads volume id in tx, through the cache: the one reader of a
// volume record, for DB.Volume and Tx.Volume.
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
