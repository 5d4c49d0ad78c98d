package jobs

import (
	"context"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/state"
)

// gc collects terminal allocations as Nomad's client does (gc_interval,
// gc_max_allocs, gc_disk_usage_threshold, gc_inode_usage_threshold): an
// allocation that was stopped or replaced (desired status stop) and whose
// tasks are all dead is collectable; past gc_max_allocs allocations, or
// while the data dir's file system is fuller than a threshold, the oldest
// collectable ones are destroyed (record, directories, sockets). Dead
// allocations that still stand for their job's current version (a batch
// job's completed run, a failed service) are kept: collecting them would
// make the job reconciler run them again. Socket directories of every dead
// allocation go at once: nothing listens there any more.
func (r *Reconciler) gc(ctx context.Context) {
	t := time.NewTicker(r.cfg.GC.Interval)
	defer t.Stop()
	for {
		r.collect(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.gcKick:
		}
	}
}

// kickGC asks for a collection now (an allocation just finished).
func (r *Reconciler) kickGC() {
	select {
	case r.gcKick <- struct{}{}:
	default:
	}
}

func (r *Reconciler) collect(ctx context.Context) {
	all := r.all()
	var collectable []*entry
	for _, e := range all {
		if !isDone(e.r) {
			continue
		}
		if err := os.RemoveAll(e.r.SocketDir()); err != nil {
			r.log.Warn("gc: removing a dead allocation's sockets", "alloc_id", e.r.ID(), "error", err)
		}
		if e.r.State().Alloc.DesiredStatus == state.AllocDesiredStatusStop {
			collectable = append(collectable, e)
		}
	}
	sort.Slice(collectable, func(i, j int) bool { return collectable[i].created.Before(collectable[j].created) })

	gc := r.cfg.GC
	maxAllocs := gc.MaxAllocs
	if maxAllocs <= 0 {
		maxAllocs = config.DefaultGCMaxAllocs
	}
	total := len(all)
	for _, e := range collectable {
		reason := ""
		switch {
		case total > maxAllocs:
			reason = "gc_max_allocs"
		case gc.DiskUsageThreshold > 0 && fsUsage(r.cfg.DataDir, diskUsed) > gc.DiskUsageThreshold:
			reason = "gc_disk_usage_threshold"
		case gc.InodeUsageThreshold > 0 && fsUsage(r.cfg.DataDir, inodesUsed) > gc.InodeUsageThreshold:
			reason = "gc_inode_usage_threshold"
		default:
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err := r.collectOne(e); err != nil {
			r.log.Warn("gc: destroying an allocation", "alloc_id", e.r.ID(), "error", err)
			continue
		}
		total--
		r.log.Info("gc: allocation collected", "alloc_id", e.r.ID(), "job_id", e.jobID, "reason", reason)
	}
	r.notify()
}

// collectOne destroys a collectable allocation under jobMu: a pass must
// not see a slot's allocation vanish under it. One a purge destroyed
// while this collection waited is skipped (found by the chaos test).
func (r *Reconciler) collectOne(e *entry) error {
	r.jobMu.Lock()
	defer r.jobMu.Unlock()
	if r.entry(e.r.ID()) != e {
		return nil
	}
	return r.destroy(e.r.ID())
}

// fsUsage is the data dir's file system usage in percent, by metric; 0
// when it cannot be read (no collection on a guess).
func fsUsage(dir string, metric func(*unix.Statfs_t) float64) float64 {
	if dir == "" {
		return 0
	}
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0
	}
	return metric(&s)
}

// diskUsed is the percentage df shows: used blocks over those an
// unprivileged user could have (root's reserve is neither).
func diskUsed(s *unix.Statfs_t) float64 {
	used := s.Blocks - s.Bfree
	if used+s.Bavail == 0 {
		return 0
	}
	return 100 * float64(used) / float64(used+s.Bavail)
}

func inodesUsed(s *unix.Statfs_t) float64 {
	if s.Files == 0 {
		return 0
	}
	return 100 * float64(s.Files-s.Ffree) / float64(s.Files)
}
