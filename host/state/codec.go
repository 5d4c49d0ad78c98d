package state

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"
)

// Values are JSON: readable with `bbolt get`, tolerant of fields added later
// (unknown fields are ignored, missing ones decode to zero). Keys are raw
// bytes chosen per bucket. These helpers are all a new bucket needs.

// putJSON stores v under key.
func putJSON(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	if err := b.Put(key, raw); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// getJSON decodes the value under key into v; found is false, and v
// untouched, when the key is absent.
func getJSON(b *bbolt.Bucket, key []byte, v any) (found bool, err error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%w: decode %q: %w", ErrCorrupt, key, err)
	}
	return true, nil
}

// deleteKey removes key; a missing key is not an error.
func deleteKey(b *bbolt.Bucket, key []byte) error {
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	return nil
}

// forEachJSON decodes every value of b, in key order, skipping nested
// buckets. fn must not keep k: bbolt owns it.
func forEachJSON[T any](b *bbolt.Bucket, fn func(k []byte, v *T) error) error {
	return b.ForEach(func(k, raw []byte) error {
		if raw == nil {
			return nil
		}
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%w: decode %q: %w", ErrCorrupt, k, err)
		}
		return fn(k, v)
	})
}
