package state

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/pluginhost/pluginhost/csi/volumes"
)

// Volume layout: volumes/<volume id> holds a volumes.Volume as JSON, the
// volume reconciler's whole record (spec, the plugin's answers, the desired
// state and the last attempt's outcome).
const bucketVolumes = "volumes"

var _ volumes.VolumeStore = (*DB)(nil)

// checkVolume refuses what no volume record may be: nil, or an ID that is
// not a valid key.
func checkVolume(v *volumes.Volume) error {
	if v == nil {
		return fmt.Errorf("put volume: nil volume")
	}
	if err := checkName("volume ID", v.ID); err != nil {
		return fmt.Errorf("put volume: %w", err)
	}
	return nil
}

// PutVolume implements volumes.VolumeStore.
func (db *DB) PutVolume(v *volumes.Volume) error {
	if err := checkVolume(v); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("put volume %s: encode: %w", v.ID, err)
	}
	err = db.batch("put volume "+v.ID, func(tx *bbolt.Tx) error {
		if err := tx.Bucket([]byte(bucketVolumes)).Put([]byte(v.ID), raw); err != nil {
			return fmt.Errorf("put %q: %w", v.ID, err)
		}
		return nil
	})
	if err == nil {
		// The next read finds exactly these bytes: it need not decode them.
		db.vols.wrote(v.ID, raw, v)
	}
	return err
}

// DeleteVolume implements volumes.VolumeStore.
func (db *DB) DeleteVolume(id string) error {
	err := db.batch("delete volume "+id, func(tx *bbolt.Tx) error {
		return deleteKey(tx.Bucket([]byte(bucketVolumes)), []byte(id))
	})
	if err != nil {
		return err
	}
	if db.vols.deleted(id) {
		// Every 64th deleter pays for the sweep: one read
		// transaction, a lookup per cached volume. A failed sweep
		// leaves entries that only cost memory; the next one takes
		// them.
		_ = db.view("sweep the volume cache", func(tx *bbolt.Tx) error {
			db.vols.sweep(tx)
			return nil
		})
	}
	return nil
}

// Volume implements volumes.VolumeStore.
func (db *DB) Volume(id string) (*volumes.Volume, error) {
	var v *volumes.Volume
	err := db.view("read volume "+id, func(tx *bbolt.Tx) error {
		var err error
		v, err = db.vols.read(tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Volumes implements volumes.VolumeStore.
func (db *DB) Volumes() ([]*volumes.Volume, error) {
	var out []*volumes.Volume
	err := db.view("list volumes", func(tx *bbolt.Tx) error {
		var err error
		out, err = readVolumes(tx)
		return err
	})
	return out, err
}

func readVolumes(tx *bbolt.Tx) ([]*volumes.Volume, error) {
	b := tx.Bucket([]byte(bucketVolumes))
	if b == nil {
		return nil, nil
	}
	var out []*volumes.Volume
	err := forEachJSON(b, func(k []byte, v *volumes.Volume) error {
		if v.ID != string(k) {
			return fmt.Errorf("%w: volume record %s holds volume %q", ErrCorrupt, k, v.ID)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

var _ volumes.VolumeTx = (*Tx)(nil)

// Volume implements volumes.VolumeTx: a volume record as this transaction
// sees it.
func (t *Tx) Volume(id string) (*volumes.Volume, error) { return t.vols.read(t.tx, id) }

// PutVolume implements volumes.VolumeTx: the record commits with the rest of
// the transaction.
func (t *Tx) PutVolume(v *volumes.Volume) error {
	if err := checkVolume(v); err != nil {
		return err
	}
	if err := putJSON(t.tx.Bucket([]byte(bucketVolumes)), []byte(v.ID), v); err != nil {
		return fmt.Errorf("put volume %s: %w", v.ID, err)
	}
	return nil
}
