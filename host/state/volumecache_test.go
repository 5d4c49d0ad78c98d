package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi/volumes"
)

// Reads through the decode cache see every write, whichever path made it
// (a batched PutVolume, a job's transaction, a delete), and what they hand
// out is the caller's own: changing it changes nothing stored or cached.
func TestVolumeCacheFollowsWrites(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	v := &volumes.Volume{ID: "v", PluginID: "p", Parameters: map[string]string{"a": "1"},
		RequestedCapabilities: []*volumes.VolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}
	if err := db.PutVolume(v); err != nil {
		t.Fatal(err)
	}
	read := func() *volumes.Volume {
		t.Helper()
		got, err := db.Volume("v")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := read()
	if !reflect.DeepEqual(first, v) {
		t.Fatalf("read %+v, want %+v", first, v)
	}
	// A caller's change stays its own.
	first.Parameters["a"] = "changed"
	first.RequestedCapabilities[0].AccessMode = "changed"
	if again := read(); !reflect.DeepEqual(again, v) {
		t.Fatalf("a change to a read record reached the next read: %+v", again)
	}
	// A write in a transaction of the caller's.
	if err := db.Update(func(tx *Tx) error {
		w := v.Clone()
		w.Parameters["a"] = "2"
		return tx.PutVolume(w)
	}); err != nil {
		t.Fatal(err)
	}
	if got := read().Parameters["a"]; got != "2" {
		t.Fatalf("after a transaction's write the read says a=%q, want 2", got)
	}
	// A transaction that rolls back leaves the committed record.
	errRollback := errors.New("roll back")
	if err := db.Update(func(tx *Tx) error {
		w := v.Clone()
		w.Parameters["a"] = "3"
		if err := tx.PutVolume(w); err != nil {
			return err
		}
		return errRollback
	}); !errors.Is(err, errRollback) {
		t.Fatalf("update: %v", err)
	}
	if got := read().Parameters["a"]; got != "2" {
		t.Fatalf("after a rolled-back write the read says a=%q, want 2", got)
	}
	if err := db.DeleteVolume("v"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Volume("v"); !errors.Is(err, volumes.ErrVolumeNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}

// A reader whose snapshot predates a delete still finds the record and
// caches it again; the sweep after sweepEvery deletes takes such entries
// out, so a volume that is gone does not stay cached.
func TestVolumeCacheForgetsDeleted(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	db.bolt.NoSync = true // only the cache is tested
	if err := db.Update(func(tx *Tx) error {
		for i := range sweepEvery {
			if err := tx.PutVolume(&volumes.Volume{ID: fmt.Sprintf("other-%d", i), PluginID: "p"}); err != nil {
				return err
			}
		}
		return tx.PutVolume(&volumes.Volume{ID: "gone", PluginID: "p"})
	}); err != nil {
		t.Fatal(err)
	}
	// A write and a read are cached.
	if err := db.PutVolume(&volumes.Volume{ID: "kept", PluginID: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Volume("gone"); err != nil {
		t.Fatal(err)
	}
	cached := func(id string) bool {
		db.vols.mu.Lock()
		defer db.vols.mu.Unlock()
		_, ok := db.vols.m[id]
		return ok
	}
	if !cached("gone") || !cached("kept") {
		t.Fatal("a read and a write left no cache entry")
	}

	// A read transaction held open blocks bbolt from growing its map,
	// which the delete below must then not need: free pages first.
	for range 2 {
		if err := db.bolt.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket([]byte(bucketVolumes))
			if b.Get([]byte("scratch")) != nil {
				return b.Delete([]byte("scratch"))
			}
			return b.Put([]byte("scratch"), make([]byte, 1<<20))
		}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := db.bolt.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	// A failure below must not leave it open: closing the store would
	// wait for it forever.
	t.Cleanup(func() { _ = old.Rollback() })
	if err := db.DeleteVolume("gone"); err != nil {
		t.Fatal(err)
	}
	if cached("gone") {
		t.Fatal("the delete left the volume cached")
	}
	if _, err := db.vols.read(old, "gone"); err != nil {
		t.Fatalf("the old snapshot's read: %v", err)
	}
	if err := old.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !cached("gone") {
		t.Fatal("the old snapshot's read did not cache: nothing left for the sweep to test")
	}
	// The delete above was one; the last of these sweeps.
	for i := range sweepEvery - 1 {
		if err := db.DeleteVolume(fmt.Sprintf("other-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if cached("gone") {
		t.Fatalf("a deleted volume stays cached after %d deletes", sweepEvery)
	}
	if !cached("kept") {
		t.Fatal("the sweep took the entry of a volume that is still stored")
	}
}

// What a cached read hands out equals what a fresh decode gives (Volumes
// does not go through the cache), nil and empty kept apart.
func TestVolumeCacheHitEqualsDecode(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	v := &volumes.Volume{ID: "e", PluginID: "p", RequestedCapabilities: []*volumes.VolumeCapability{}, Parameters: map[string]string{},
		MountOptions: &volumes.MountOptions{MountFlags: []string{}}, AccessibleTopology: []*volumes.Topology{},
		RequestedTopologies: &volumes.TopologyRequest{Required: []*volumes.Topology{}},
		Claims:              []*volumes.Claim{{AllocID: "a", MountOptions: &volumes.MountOptions{MountFlags: []string{}}}}}
	if err := db.PutVolume(v); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // a miss, then a hit
		got, err := db.Volume("e")
		if err != nil {
			t.Fatal(err)
		}
		vols, err := db.Volumes()
		if err != nil || len(vols) != 1 {
			t.Fatalf("Volumes: %v, %v", vols, err)
		}
		if !reflect.DeepEqual(got, vols[0]) || !reflect.DeepEqual(got, v) {
			t.Fatalf("read %d: %#v, a decode gives %#v", i, got, vols[0])
		}
	}
}

// What PutVolume leaves in the cache is what a decode of the bytes it wrote
// gives, for a volume with every field set (filled by reflection, so that
// a field added later is checked too) and times from time.Now, which
// carry what JSON drops. The read after the write is a cache hit.
func TestVolumeCacheWriteEqualsDecode(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	v := new(volumes.Volume)
	fill(reflect.ValueOf(v).Elem())
	v.ID = "v"
	if err := db.PutVolume(v); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := new(volumes.Volume)
	if err := json.Unmarshal(raw, want); err != nil {
		t.Fatal(err)
	}
	db.vols.mu.Lock()
	e, ok := db.vols.m["v"]
	db.vols.mu.Unlock()
	if !ok || !bytes.Equal(e.raw, raw) {
		t.Fatal("the write left no cache entry for its bytes")
	}
	if !reflect.DeepEqual(e.v, want) {
		t.Fatalf("cached after the write:\n%#v\nwant a decode:\n%#v", e.v, want)
	}
	got, err := db.Volume("v")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read after the write:\n%#v\nwant a decode:\n%#v", got, want)
	}
	// The caller's own record stays its own.
	v.Claims[0].AllocID = "changed"
	if again, _ := db.Volume("v"); again.Claims[0].AllocID == "changed" {
		t.Fatal("a change to the written record reached the cache")
	}
}

// fill sets every field reachable from v to a value that is not the zero
// value: one-element slices and maps, pointers to filled values, and
// time.Now for times.
func fill(v reflect.Value) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Now()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
