package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt's on-disk meta page, read here without bbolt so that a damaged file
// is judged before bbolt maps it. bbolt trusts the meta's high-water mark and
// touches every page below it while rebuilding the freelist (we run with
// NoFreelistSync), partly on a goroutine of its own where a SIGBUS from a
// truncated mapping cannot be recovered: the process would simply die. So a
// file whose committed size exceeds its real size must be refused first.
//
// Layout (native endian, bbolt format version 2): a 16-byte page header, then
// magic u32, version u32, pageSize u32, flags u32, root pgid u64, root
// sequence u64, freelist pgid u64, high-water pgid u64, txid u64 and an
// FNV-64a checksum of the preceding 56 bytes.
const (
	boltPageHeaderSize = 16
	boltMetaSize       = 64
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	boltNoFreelist     = ^uint64(0)
	minPageSize        = 1024
	maxPageSizeShift   = 14 // bbolt probes page sizes 1 KiB .. 16 MiB
)

type boltMeta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
}

// parseBoltMeta decodes and verifies one meta page image; ok is false when it
// is not a valid meta (a torn write, zeroes, or not bbolt at all).
func parseBoltMeta(page []byte) (boltMeta, bool) {
	if len(page) < boltPageHeaderSize+boltMetaSize {
		return boltMeta{}, false
	}
	m := page[boltPageHeaderSize : boltPageHeaderSize+boltMetaSize]
	le := binary.NativeEndian
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if h.Sum64() != le.Uint64(m[56:]) {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: uint64(le.Uint32(m[8:])),
		root:     le.Uint64(m[16:]),
		freelist: le.Uint64(m[32:]),
		hwm:      le.Uint64(m[40:]),
		txid:     le.Uint64(m[48:]),
	}, true
}

// precheckFile reports whether path is absent or empty (a new state file) and
// otherwise refuses files that bbolt could not open safely. Reading without
// bbolt's lock is sound: a committed meta never names pages beyond the file,
// bbolt never shrinks the file, and a torn meta fails its checksum.
func precheckFile(path string) (fresh bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open state file %s: %w", path, err)
	}
	defer f.Close()

	var metas []boltMeta
	first := make([]byte, boltPageHeaderSize+boltMetaSize)
	n, err := f.ReadAt(first, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read state file %s: %w", path, err)
	}
	if n == 0 {
		return true, nil
	}
	m0, ok0 := parseBoltMeta(first[:n])
	if ok0 {
		metas = append(metas, m0)
	}
	// The second meta sits one page in; without a valid first meta the page
	// size is unknown, so try every size bbolt itself would try.
	for shift := 0; shift <= maxPageSizeShift; shift++ {
		off := int64(minPageSize) << shift
		if ok0 && uint64(off) != m0.pageSize {
			continue
		}
		buf := make([]byte, boltPageHeaderSize+boltMetaSize)
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("read state file %s: %w", path, err)
		}
		if m1, ok := parseBoltMeta(buf[:n]); ok && m1.pageSize == uint64(off) {
			metas = append(metas, m1)
			break
		}
	}
	if len(metas) == 0 {
		return false, fmt.Errorf("%w: state file %s is not a valid bbolt database (both meta pages are damaged or missing)", ErrCorrupt, path)
	}

	// bbolt uses the valid meta with the highest transaction id.
	meta := metas[0]
	for _, m := range metas[1:] {
		if m.txid > meta.txid {
			meta = m
		}
	}
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat state file %s: %w", path, err)
	}
	size := uint64(st.Size())
	switch {
	case meta.pageSize < minPageSize || meta.pageSize > minPageSize<<maxPageSizeShift:
		return false, fmt.Errorf("%w: state file %s has an impossible page size %d", ErrCorrupt, path, meta.pageSize)
	case meta.hwm < 3 || meta.hwm > size/meta.pageSize:
		return false, fmt.Errorf("%w: state file %s is truncated: %d bytes on disk, its last commit needs %d",
			ErrCorrupt, path, size, meta.hwm*meta.pageSize)
	case meta.root < 2 || meta.root >= meta.hwm:
		return false, fmt.Errorf("%w: state file %s names root page %d outside the file", ErrCorrupt, path, meta.root)
	case meta.freelist != boltNoFreelist && (meta.freelist < 2 || meta.freelist >= meta.hwm):
		return false, fmt.Errorf("%w: state file %s names freelist page %d outside the file", ErrCorrupt, path, meta.freelist)
	}
	return false, nil
}
