package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pluginhost/pluginhost/dynamic"
	"go.etcd.io/bbolt"
)

var _ dynamic.Store = (*DB)(nil)

// pluginKey encodes (type, name, alloc) as three length-prefixed fields
// (uvarint length, then bytes). The registry accepts any non-empty strings,
// so no separator byte is safe; a length prefix makes the encoding injective
// whatever the strings hold.
func pluginKey(pluginType, name, allocID string) []byte {
	k := make([]byte, 0, 3*binary.MaxVarintLen16+len(pluginType)+len(name)+len(allocID))
	for _, s := range [...]string{pluginType, name, allocID} {
		k = binary.AppendUvarint(k, uint64(len(s)))
		k = append(k, s...)
	}
	return k
}

// parsePluginKey is pluginKey's inverse; it rejects every byte string that
// pluginKey cannot produce.
func parsePluginKey(k []byte) (pluginType, name, allocID string, err error) {
	var parts [3]string
	rest := k
	for i := range parts {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return "", "", "", fmt.Errorf("malformed plugin key %q", k)
		}
		rest = rest[w:]
		parts[i] = string(rest[:n])
		rest = rest[n:]
	}
	if len(rest) != 0 || !bytes.Equal(k, pluginKey(parts[0], parts[1], parts[2])) {
		return "", "", "", fmt.Errorf("malformed plugin key %q", k)
	}
	return parts[0], parts[1], parts[2], nil
}

// PutPlugins implements dynamic.Store: the records in one commit.
func (db *DB) PutPlugins(infos ...*dynamic.PluginInfo) error {
	for _, info := range infos {
		if info == nil {
			return errors.New("put plugin: nil info")
		}
		if info.Type == "" || info.Name == "" || info.AllocID == "" {
			return fmt.Errorf("put plugin: type %q, name %q and alloc %q must all be set", info.Type, info.Name, info.AllocID)
		}
	}
	return db.update("put plugin", func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketPlugins))
		for _, info := range infos {
			if err := putJSON(b, pluginKey(info.Type, info.Name, info.AllocID), info); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeletePlugin implements dynamic.Store; a missing record is not an error.
func (db *DB) DeletePlugin(pluginType, name, allocID string) error {
	key := pluginKey(pluginType, name, allocID)
	return db.update("delete plugin", func(tx *bbolt.Tx) error {
		return deleteKey(tx.Bucket([]byte(bucketPlugins)), key)
	})
}

// Plugins implements dynamic.Store. A record whose key disagrees with its
// value is reported as corruption rather than restored under either name.
func (db *DB) Plugins() ([]*dynamic.PluginInfo, error) {
	var out []*dynamic.PluginInfo
	err := db.view("list plugins", func(tx *bbolt.Tx) error {
		var err error
		out, err = readPlugins(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func readPlugins(tx *bbolt.Tx) ([]*dynamic.PluginInfo, error) {
	var out []*dynamic.PluginInfo
	b := tx.Bucket([]byte(bucketPlugins))
	if b == nil {
		return nil, nil
	}
	err := forEachJSON(b, func(k []byte, p *dynamic.PluginInfo) error {
		typ, name, alloc, err := parsePluginKey(k)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if typ != p.Type || name != p.Name || alloc != p.AllocID {
			return fmt.Errorf("%w: plugin record %q holds (%q, %q, %q)", ErrCorrupt, k, p.Type, p.Name, p.AllocID)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
