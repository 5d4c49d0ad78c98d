package host

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
func (a *Agent) gc(ctx context.Context) {
	t := time.NewTicker(a.cfg.GC.Interval)
	defer t.Stop()
	for {
		a.collect(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.gcKick:
		}
	}
}

// kickGC asks for a collection now (an allocation just finished).
func (a *Agent) kickGC() {
	select {
	case a.gcKick <- struct{}{}:
	default:
	}
}

func (a *Agent) collect(ctx context.Context) {
	a.mu.Lock()
	all := make([]*allocEntry, 0, len(a.allocs))
	for _, e := range a.allocs {
		all = append(all, e)
	}
	a.mu.Unlock()

	var collectable []*allocEntry
	for _, e := range all {
		if !isDone(e) {
			continue
		}
		if err := os.RemoveAll(e.runner.SocketDir()); err != nil {
			a.logger.Warn("gc: removing a dead allocation's sockets", "alloc_id", e.runner.ID(), "error", err)
		}
		if e.runner.State().Alloc.DesiredStatus == state.AllocDesiredStatusStop {
			collectable = append(collectable, e)
		}
	}
	sort.Slice(collectable, func(i, j int) bool { return collectable[i].created.Before(collectable[j].created) })

	maxAllocs := a.cfg.GC.MaxAllocs
	if maxAllocs <= 0 {
		maxAllocs = config.DefaultGCMaxAllocs
	}
	total := len(all)
	for _, e := range collectable {
		reason := ""
		switch {
		case total > maxAllocs:
			reason = "gc_max_allocs"
		case a.cfg.GC.DiskUsageThreshold > 0 && a.fsUsage(diskUsed) > a.cfg.GC.DiskUsageThreshold:
			reason = "gc_disk_usage_threshold"
		case a.cfg.GC.InodeUsageThreshold > 0 && a.fsUsage(inodesUsed) > a.cfg.GC.InodeUsageThreshold:
			reason = "gc_inode_usage_threshold"
		default:
			return
		}
		if ctx.Err() != nil {
			return
		}
		// jobMu: a reconcile pass must not see a slot's allocation vanish
		// under it.
		a.jobMu.Lock()
		a.mu.Lock()
		tracked := a.allocs[e.runner.ID()] == e
		a.mu.Unlock()
		if !tracked {
			// A purge destroyed it while this collection waited.
			a.jobMu.Unlock()
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, stopTimeout)
		err := e.runner.Destroy(dctx)
		cancel()
		if err == nil {
			a.mu.Lock()
			delete(a.allocs, e.runner.ID())
			a.mu.Unlock()
		}
		a.jobMu.Unlock()
		if err != nil {
			a.logger.Warn("gc: destroying an allocation", "alloc_id", e.runner.ID(), "error", err)
			continue
		}
		total--
		a.logger.Info("gc: allocation collected", "alloc_id", e.runner.ID(), "job_id", e.jobID, "reason", reason)
	}
	a.notifyChanged()
}

// fsUsage is the data dir's file system usage in percent, by metric; 0
// when it cannot be read (no collection on a guess).
func (a *Agent) fsUsage(metric func(*unix.Statfs_t) float64) float64 {
	var s unix.Statfs_t
	if err := unix.Statfs(a.cfg.DataDir, &s); err != nil {
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
