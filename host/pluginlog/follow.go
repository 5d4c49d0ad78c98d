package pluginlog

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// DefaultInterval is how often a followed file is checked for new lines. The
// file is written by another process (the plugin), so nothing in the agent
// is told when a line arrives; a quarter second is what host/logs.go uses
// too, and the cost is one fstat per running plugin per tick.
const DefaultInterval = 250 * time.Millisecond

// readChunk is how much is read from the file at a time.
const readChunk = 32 << 10

// Follower ships the lines appended to one plugin's log file to a logger.
// Its goroutine is started by Follow and ended by Stop; whoever calls
// Follow owns it and must call Stop.
type Follower struct {
	// dir holds the file (the allocation's log directory, which the
	// Follower owns and closes); name is the file's name in it, path
	// the whole path for messages.
	dir      *beneath.Dir
	name     string
	path     string
	logger   hclog.Logger
	interval time.Duration
	// refused is set once a refusal to open the file was logged.
	refused bool

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// Owned by the goroutine.
	f       *os.File
	off     int64
	partial []byte
	// skipping is set while the rest of an over-long line is discarded.
	skipping bool
	skipped  int
	// modLogger caches the logger of the last @module seen: plugins log
	// from one or two modules, and Named allocates.
	mod       string
	modLogger hclog.Logger
}

// Follow starts shipping the lines of the file name in dir, from byte
// offset on, to logger, each at its own level under logger.Named(@module).
// The Follower owns dir from then on and closes it when it stops. The file
// need not exist yet. It is opened beneath dir and never through a link,
// nor when it has a second name: the agent is root and the file is the
// plugin's to write (package beneath). A file that shrinks below the offset
// (truncated) is read again from its start, and one replaced by another
// file (renamed away) is finished and then the new one is read from its
// start. interval 0 means DefaultInterval.
func Follow(dir *beneath.Dir, name string, offset int64, logger hclog.Logger, interval time.Duration) *Follower {
	if interval <= 0 {
		interval = DefaultInterval
	}
	fl := &Follower{
		dir: dir, name: name, path: dir.Name() + "/" + name, logger: logger, interval: interval, off: max(offset, 0),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go fl.run()
	return fl
}

// Stop ships what the file holds now, including a last line without its
// newline, and returns once the goroutine has ended. It is safe to call more
// than once.
func (fl *Follower) Stop() {
	fl.stopOnce.Do(func() { close(fl.stop) })
	<-fl.done
}

func (fl *Follower) run() {
	defer close(fl.done)
	defer func() {
		if fl.f != nil {
			_ = fl.f.Close()
		}
		_ = fl.dir.Close()
	}()
	t := time.NewTicker(fl.interval)
	defer t.Stop()
	for {
		fl.poll()
		select {
		case <-fl.stop:
			fl.poll()
			fl.flushPartial()
			return
		case <-t.C:
		}
	}
}

// poll reads what was appended since the last poll. It reads no further than
// the size the file had when it began, so that a plugin writing without
// pause cannot keep it (and Stop) from returning.
func (fl *Follower) poll() {
	if fl.f == nil {
		f, err := fl.dir.OpenFile(fl.name, os.O_RDONLY, 0)
		switch {
		case errors.Is(err, beneath.ErrUnsafe) && !fl.refused:
			fl.refused = true
			fl.logger.Warn("plugin log file refused", "error", err)
			return
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) {
				fl.logger.Debug("plugin log file unreadable", "path", fl.path, "error", err)
			}
			return
		}
		fl.f = f
	}
	fi, err := fl.f.Stat()
	if err != nil {
		return
	}
	if fi.Size() < fl.off {
		// Truncated under us: whatever is there now is new.
		fl.off = 0
		fl.partial = fl.partial[:0]
		fl.skipping = false
	}
	fl.readTo(fi.Size())
	if fl.replaced(fi) {
		// Everything the old file had is read; the plugin now writes to
		// the new one.
		_ = fl.f.Close()
		fl.f = nil
		fl.off = 0
		fl.flushPartial()
	}
}

// replaced reports whether the name now holds another file than the one
// open (or none).
func (fl *Follower) replaced(open fs.FileInfo) bool {
	cur, err := fl.dir.Lstat(fl.name)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	a, ok := open.Sys().(*syscall.Stat_t)
	return ok && (a.Ino != cur.Ino || a.Dev != cur.Dev)
}

func (fl *Follower) readTo(size int64) {
	buf := make([]byte, readChunk)
	for fl.off < size {
		n, err := fl.f.ReadAt(buf[:min(int64(len(buf)), size-fl.off)], fl.off)
		fl.off += int64(n)
		fl.consume(buf[:n])
		if err != nil {
			if !errors.Is(err, io.EOF) {
				fl.logger.Debug("read plugin log file", "path", fl.path, "error", err)
			}
			return
		}
	}
}

// consume splits p into lines, keeping an unfinished line for the next read.
// A line longer than MaxLineBytes is cut there: its first MaxLineBytes are
// logged and the rest is counted, never buffered.
func (fl *Follower) consume(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
			p = p[i+1:]
		} else {
			p = nil
		}
		if fl.skipping {
			fl.skipped += len(chunk)
		} else if room := MaxLineBytes - len(fl.partial); len(chunk) > room {
			fl.partial = append(fl.partial, chunk[:room]...)
			fl.skipping, fl.skipped = true, len(chunk)-room
		} else {
			fl.partial = append(fl.partial, chunk...)
		}
		if i >= 0 {
			fl.emitPartial()
		}
	}
}

func (fl *Follower) flushPartial() {
	if len(fl.partial) > 0 || fl.skipping {
		fl.emitPartial()
	}
}

func (fl *Follower) emitPartial() {
	var e Entry
	if fl.skipping {
		e = Entry{Level: hclog.Info, Message: clean(string(fl.partial)), Args: []any{"plugin_line_truncated_bytes", fl.skipped}}
	} else if len(bytes.TrimSpace(fl.partial)) == 0 {
		fl.partial = fl.partial[:0]
		return
	} else {
		e = Parse(fl.partial)
	}
	fl.partial = fl.partial[:0]
	fl.skipping, fl.skipped = false, 0
	fl.log(e)
}

func (fl *Follower) log(e Entry) {
	l := fl.logger
	if e.Module != "" {
		if e.Module != fl.mod || fl.modLogger == nil {
			fl.mod, fl.modLogger = e.Module, fl.logger.Named(e.Module)
		}
		l = fl.modLogger
	}
	l.Log(e.Level, e.Message, e.Args...)
}
