package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi/volumes"
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
// still finds the old bytes and caches them after DeleteVolume dropped the
// entry, keeping one for a volume that is gone and that nobody reads
// again. Such an entry is harmless (keyed by content, it can only ever
// answer for bytes that decode to it) but would stay for the agent's life,
// so every sweepEvery deletes the entries of volumes no longer stored are
// swept out: there are never more stale ones than reads and writes that
// overlapped those deletes. An earlier version refused to cache anything
// read or written in a snapshot older than the last delete; with a delete
// in most group commits under load, decoding was back at about 5% of the
// agent's CPU.
type volumeCache struct {
	mu sync.Mutex
	m  map[string]cachedVolume
	// deletes counts the deletes since the last sweep.
	deletes int
}

// sweepEvery is how many deletes a sweep of stale entries waits for.
const sweepEvery = 64

type cachedVolume struct {
	raw []byte
	v   *volumes.Volume
}

// get returns volume id as stored in raw (the bucket's value, valid for the
// read's transaction only), decoding it only when raw is new. A nil cache
// decodes every time (a Tx made outside DB.Update).
func (c *volumeCache) get(id string, raw []byte) (*volumes.Volume, error) {
	if c != nil {
		c.mu.Lock()
		e, ok := c.m[id]
		c.mu.Unlock()
		if ok && bytes.Equal(e.raw, raw) {
			return e.v.Clone(), nil
		}
	}
	v := new(volumes.Volume)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%w: decode %q: %w", ErrCorrupt, id, err)
	}
	if c == nil {
		return v, nil
	}
	c.put(id, bytes.Clone(raw), v)
	return v.Clone(), nil
}

// wrote records what PutVolume wrote: raw, which the cache takes, encodes
// v, which the caller keeps. The entry holds what a decode of raw would
// give: a clone of v whose times went through JSON, the only fields a
// decode does not give back as they were (time.Now carries a monotonic
// reading and the Local location; a decode carries neither).
// TestVolumeCacheWriteEqualsDecode fills every field of a volume to check
// that no other field differs.
func (c *volumeCache) wrote(id string, raw []byte, v *volumes.Volume) {
	d := v.Clone()
	d.CreateTime, d.ModifyTime = viaJSON(d.CreateTime), viaJSON(d.ModifyTime)
	for _, cl := range d.Claims {
		if cl != nil {
			cl.CreateTime, cl.ModifyTime = viaJSON(cl.CreateTime), viaJSON(cl.ModifyTime)
		}
	}
	c.put(id, raw, d)
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

// put caches raw (which the cache owns) as decoding to v (likewise).
func (c *volumeCache) put(id string, raw []byte, v *volumes.Volume) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedVolume)
	}
	c.m[id] = cachedVolume{raw: raw, v: v}
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

// deleted drops a volume whose delete committed, and reports whether a
// sweep is due.
func (c *volumeCache) deleted(id string) (sweep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
	c.deletes++
	if c.deletes < sweepEvery {
		return false
	}
	c.deletes = 0
	return true
}

// sweep drops the entries of volumes that tx does not hold: those a reader
// on a snapshot older than their delete put back. The lookups run without
// the lock, so that reads do not wait for a sweep of many volumes; an
// entry put back for a volume created again meanwhile is dropped too,
// which costs that volume one decode.
func (c *volumeCache) sweep(tx *bbolt.Tx) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.m))
	for id := range c.m {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	b := tx.Bucket([]byte(bucketVolumes))
	gone := ids[:0]
	for _, id := range ids {
		if b.Get([]byte(id)) == nil {
			gone = append(gone, id)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range gone {
		delete(c.m, id)
	}
}

// read reads volume id in tx, through the cache: the one reader of a
// volume record, for DB.Volume and Tx.Volume.
func (c *volumeCache) read(tx *bbolt.Tx, id string) (*volumes.Volume, error) {
	raw := tx.Bucket([]byte(bucketVolumes)).Get([]byte(id))
	if raw == nil {
		c.forget(id)
		return nil, fmt.Errorf("volume %q: %w", id, volumes.ErrVolumeNotFound)
	}
	v, err := c.get(id, raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("volume %s: %w", id, err)
	case v.ID != id:
		return nil, fmt.Errorf("%w: volume record %s holds volume %q", ErrCorrupt, id, v.ID)
	}
	return v, nil
}
