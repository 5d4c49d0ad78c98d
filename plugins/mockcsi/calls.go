package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// callsFileName is the concurrency record in the state dir.
const callsFileName = "calls.json"

// callsFile is what calls.json holds. The field names are its JSON names
// as they are: tests in other packages and languages read the file.
type callsFile struct {
	// Overlaps counts the calls that started while another call for the
	// same volume was in flight; OverlapsByVolume splits it by volume key.
	Overlaps         int64
	OverlapsByVolume map[string]int64
	// MaxParallel is the most calls naming a volume in flight at once,
	// across all volumes: a CO that serializes per volume but not globally
	// shows more than 1 here and 0 Overlaps.
	MaxParallel int
	// Calls counts every CSI call by method, also those naming no volume.
	Calls map[string]int64
	// InFlight is the number of CSI calls still in flight when the file
	// was written. A caller's call may still be finishing in the plugin
	// after the caller gave up or died, so a test waits for a file with
	// InFlight 0: that file has every call made so far in it.
	InFlight int
}

// callRecord keeps the record of a CO's calls per volume, for tests of the
// rule a CO's per-volume queue must keep: never two calls for one volume in
// flight. The per-volume lock (store.acquire) enforces nothing of the kind
// for the CO: it answers ABORTED and the CO may well have sent both calls.
// The record sees every call as it arrives, before the lock, the fault
// interceptor and the handler, and until it is answered, delay included.
//
// A call's volume key is the volume's name: CreateVolume has only the name,
// and mockcsi's volume IDs are random, not derived from it. A call naming a
// volume ID is keyed by the name of the volume with that ID, known from
// the state or from an earlier call (so still known after DeleteVolume);
// an ID mockcsi cannot place, such as one deleted before this process
// started, is its own key. CreateSnapshot is keyed by its source volume; a
// clone's CreateVolume by its own name only.
type callRecord struct {
	path string
	log  hclog.Logger
	// volumeName finds a volume's name in the state.
	volumeName func(id string) (string, bool)

	mu       sync.Mutex
	rec      callsFile
	names    map[string]string // volume ID → name, never forgotten
	inFlight map[string]int    // volume key → calls in flight
	parallel int               // calls naming a volume in flight
	pending  int               // CSI calls in flight
	seq      uint64            // changes of rec, for write ordering

	// writeMu orders the writes; written is the seq in the file, so that a
	// write of an older record never replaces a newer one.
	writeMu sync.Mutex
	written uint64
}

// openCallRecord continues the record in dir/calls.json, if any: the
// record covers the state dir's life, as the state does, so a test that
// restarts the plugin still sees overlaps from before the restart. The
// calls of an earlier process are not in flight any more. A test that
// wants a fresh record removes the file before starting the plugin.
func openCallRecord(dir string, log hclog.Logger, volumeName func(string) (string, bool)) (*callRecord, error) {
	r := &callRecord{
		path:       filepath.Join(dir, callsFileName),
		log:        log,
		volumeName: volumeName,
		names:      map[string]string{},
		inFlight:   map[string]int{},
	}
	b, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read call record: %w", err)
	default:
		if err := json.Unmarshal(b, &r.rec); err != nil {
			return nil, fmt.Errorf("decode call record %s (remove it to start a new one): %w", r.path, err)
		}
	}
	r.rec.InFlight = 0
	if r.rec.OverlapsByVolume == nil {
		r.rec.OverlapsByVolume = map[string]int64{}
	}
	if r.rec.Calls == nil {
		r.rec.Calls = map[string]int64{}
	}
	return r, nil
}

// intercept records each CSI call from its arrival to its answer. It must
// be the outermost interceptor, so that time spent in injected latency and
// delay counts as in flight, as it does for the caller.
func (r *callRecord) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, "/csi.v1.") {
		return handler(ctx, req)
	}
	key := r.key(req)
	r.begin(path.Base(info.FullMethod), key)
	resp, err := handler(ctx, req)
	// The ID CreateVolume hands out is learned before the caller can use
	// it, so no later call by that ID is keyed differently.
	if cv, ok := resp.(*csi.CreateVolumeResponse); ok && err == nil && cv.GetVolume().GetVolumeId() != "" {
		r.mu.Lock()
		r.names[cv.GetVolume().GetVolumeId()] = key
		r.mu.Unlock()
	}
	r.end(key)
	return resp, err
}

// key returns the volume key of a call, "" for a call naming no volume.
func (r *callRecord) key(req any) string {
	switch q := req.(type) {
	case *csi.CreateVolumeRequest:
		return q.GetName()
	case *csi.CreateSnapshotRequest:
		return r.keyOfID(q.GetSourceVolumeId())
	case interface{ GetVolumeId() string }:
		return r.keyOfID(q.GetVolumeId())
	}
	return ""
}

func (r *callRecord) keyOfID(id string) string {
	if id == "" {
		return ""
	}
	r.mu.Lock()
	name, ok := r.names[id]
	r.mu.Unlock()
	if ok {
		return name
	}
	// Outside r.mu: the store's lock is held across state writes, which
	// must not hold up the record of other calls.
	name, ok = r.volumeName(id)
	if !ok {
		return id
	}
	r.mu.Lock()
	r.names[id] = name
	r.mu.Unlock()
	return name
}

func (r *callRecord) begin(method, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Calls[method]++
	r.pending++
	if key == "" {
		return
	}
	if r.inFlight[key] > 0 {
		r.rec.Overlaps++
		r.rec.OverlapsByVolume[key]++
	}
	r.inFlight[key]++
	r.parallel++
	r.rec.MaxParallel = max(r.rec.MaxParallel, r.parallel)
}

// end closes a call and writes the record before the call is answered, so
// that a caller holding an answer finds its call in calls.json.
func (r *callRecord) end(key string) {
	r.mu.Lock()
	if key != "" {
		if r.inFlight[key]--; r.inFlight[key] == 0 {
			delete(r.inFlight, key)
		}
		r.parallel--
	}
	r.pending--
	r.rec.InFlight = r.pending
	r.seq++
	seq := r.seq
	b, err := json.MarshalIndent(&r.rec, "", "  ")
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("cannot encode call record", "error", err)
		return
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if seq <= r.written {
		return
	}
	if err := replaceFile(r.path, b); err != nil {
		r.log.Warn("cannot write call record", "path", r.path, "error", err)
		return
	}
	r.written = seq
}

// snapshot returns a copy of the record as it is now, calls in flight
// included.
func (r *callRecord) snapshot() callsFile {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.rec
	c.InFlight = r.pending
	c.OverlapsByVolume = maps.Clone(r.rec.OverlapsByVolume)
	c.Calls = maps.Clone(r.rec.Calls)
	return c
}

// replaceFile replaces path with data through a temp file and a rename,
// so that a reader never sees a partial file. Unlike writeFileAtomic it
// does not fsync: the record is written before every answer, it has to be
// cheap, and it is for readers on the same machine, not for surviving a
// power cut.
func replaceFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
