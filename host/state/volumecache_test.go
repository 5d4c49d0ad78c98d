package state

import (
	"errors"
	"reflect"
	"testing"

	"github.com/pluginhost/pluginhost/csi"
)

// Reads through the decode cache see every write, whichever path made it
// (a batched PutVolume, a job's transaction, a delete), and what they hand
// out is the caller's own: changing it changes nothing stored or cached.
func TestVolumeCacheFollowsWrites(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	v := &csi.Volume{ID: "v", PluginID: "p", Parameters: map[string]string{"a": "1"},
		RequestedCapabilities: []*csi.VolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}
	if err := db.PutVolume(v); err != nil {
		t.Fatal(err)
	}
	read := func() *csi.Volume {
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
	if _, err := db.Volume("v"); !errors.Is(err, csi.ErrVolumeNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}
