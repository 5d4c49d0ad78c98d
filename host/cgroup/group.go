package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Group is one task's cgroup: a directory in each hierarchy (one on v2).
// A Group holds no open files, so keeping one per task costs nothing, and
// it is safe for concurrent use.
type Group struct {
	m    *Manager
	name string
	path string
	// dirs are the group's directories, one per hierarchy; procs their
	// cgroup.procs files, ready for AddPid.
	dirs  []string
	procs []string
	// The directories holding each controller's files, "" when the
	// controller is not there.
	mem, cpu, cpuacct, freezer, pids string
	// fresh: Create made every directory of the group.
	fresh bool
	// killTurn makes a group's sweeping Kills take turns (the driver's
	// and the task runner's can overlap at a stop): each puts back the
	// pids.max it found, which must not be another Kill's 0. A channel
	// rather than a mutex, so that a Kill waiting for its turn still
	// ends with its context.
	killTurn chan struct{}
}

// Fresh reports that Create made every directory of the group itself,
// just now: no process can be in it yet, so a launch need not look for
// (and kill) what an earlier launch left there.
func (g *Group) Fresh() bool { return g.fresh }

// Path is the group's path within every hierarchy, e.g.
// "/pluginhost/<allocID>.<task>": persist it in the task handle and give it
// to Manager.Open after a restart.
func (g *Group) Path() string { return g.path }

// Dirs are the group's directories, one per hierarchy.
func (g *Group) Dirs() []string { return slices.Clone(g.dirs) }

// FD opens the group's directory for clone3's CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD and CgroupFD), which puts the child in the
// group before it runs a single instruction of its own. v2 only: v1 has
// no such thing (use AddPid). The caller closes the descriptor after
// starting the process.
func (g *Group) FD() (int, error) {
	if g.m.version != 2 {
		return -1, fmt.Errorf("cgroup %s: a cgroup descriptor for clone3 needs cgroup v2: %w", g.path, errors.ErrUnsupported)
	}
	fd, err := unix.Open(g.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cgroup %s: opening %s: %w", g.path, g.dirs[0], err)
	}
	return fd, nil
}

// ProcsFiles are the cgroup.procs files of every hierarchy the group lives
// in; writing a pid to each moves the process into the group.
func (g *Group) ProcsFiles() []string { return slices.Clone(g.procs) }

// AddPid moves a process (all its threads) into the group in every
// hierarchy. On v1 the caller stops the child before it runs user code
// (ptrace at exec) and calls this, so it only opens and writes files whose
// names were worked out in advance: about one open+write+close per
// hierarchy, measured in BenchmarkAddPid.
func (g *Group) AddPid(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("adding pid %d to cgroup %s: not a pid", pid, g.path)
	}
	var buf [20]byte
	b := strconv.AppendInt(buf[:0], int64(pid), 10)
	for _, f := range g.procs {
		if err := writeBytes(f, b); err != nil {
			return fmt.Errorf("adding pid %d to cgroup %s: %w", pid, g.path, err)
		}
	}
	return nil
}

// Pids lists the processes in the group (in any of its hierarchies),
// sorted. Zombies are not listed by the kernel.
func (g *Group) Pids() ([]int, error) {
	var all []int
	for _, f := range g.procs {
		ps, err := readPids(f)
		if err != nil {
			return nil, fmt.Errorf("listing processes of cgroup %s: %w", g.path, err)
		}
		all = append(all, ps...)
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// Kill SIGKILLs every process in the group until none is left or ctx
// ends. A process that called setsid, double-forked or is forking as fast
// as it can is still in the group, so none escapes:
//
//   - v2 with cgroup.kill (Linux 5.14): the kernel kills the whole group,
//     new forks included, in one write; Kill waits for it to be empty.
//   - v1, or v2 without cgroup.kill: the group is frozen (freezer
//     controller / cgroup.freeze) so no process can fork between listing
//     and killing, every listed process is sent SIGKILL, the group is
//     thawed so the signals are acted on, and this repeats until the list
//     is empty. With the pids controller pids.max is 0 meanwhile, and put
//     back after: no fork or clone in the group succeeds, frozen or not,
//     so every round can only shrink it. Without a freezer and pids the
//     sweep still converges, one generation of children per round.
//
// A zombie counts as gone: it holds no memory and its parent (the agent,
// for the task's main process) reaps it.
func (g *Group) Kill(ctx context.Context) (err error) {
	useKill := false
	if g.m.version == 2 {
		_, err := os.Stat(filepath.Join(g.dirs[0], "cgroup.kill"))
		useKill = err == nil
	}
	if !useKill {
		// The usual end: the kill signal took the task and its children,
		// and the group is empty. Nothing enters an empty group but a
		// migration, which only the agent makes, so it needs no
		// freeze–kill–thaw sweep: 0.18 ms instead of 0.48 ms for an
		// empty group on v1 here.
		if ps, err := g.Pids(); err == nil && len(liveOnly(ps)) == 0 {
			return nil
		}
		if g.pids != "" {
			select {
			case g.killTurn <- struct{}{}:
				defer func() { <-g.killTurn }()
			case <-ctx.Done():
				return fmt.Errorf("killing cgroup %s: waiting for another kill of it: %w", g.path, ctx.Err())
			}
			release, herr := g.holdForks()
			switch {
			case errors.Is(herr, fs.ErrNotExist):
				// The group went since the listing: the sweep
				// finds it gone.
			case herr != nil:
				// The sweep converges without it, as on a host
				// without the pids controller.
				g.m.logger.Warn("cannot stop forks while killing the group", "path", g.path, "error", herr)
			default:
				defer func() {
					if rerr := release(); rerr != nil {
						err = errors.Join(err, fmt.Errorf("killing cgroup %s: %w", g.path, rerr))
					}
				}()
			}
		}
	}
	wait := 500 * time.Microsecond
	for round := 1; ; round++ {
		var left []int
		var err error
		if useKill {
			left, err = g.killV2()
		} else {
			left, err = g.sweep(ctx)
		}
		if err != nil {
			return fmt.Errorf("killing cgroup %s: %w", g.path, err)
		}
		if len(left) == 0 {
			if round > 1 {
				g.m.logger.Trace("cgroup emptied", "path", g.path, "rounds", round)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("killing cgroup %s: %d processes left %v: %w", g.path, len(left), left, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 20*time.Millisecond)
	}
}

// killV2 writes cgroup.kill and returns the live processes still listed
// (those still exiting).
func (g *Group) killV2() ([]int, error) {
	if err := writeFile(filepath.Join(g.dirs[0], "cgroup.kill"), "1"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // the group itself is gone
		}
		return nil, err
	}
	ps, err := g.Pids()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return liveOnly(ps), nil
}

// sweep is one freeze–kill–thaw round. It returns the live processes
// listed after the signals went out and the group was thawed; none means
// the group is empty. The list it signalled cannot tell that: without a
// freezer (or past freeze's deadline) a listed process may fork after the
// listing and then die, and its child is in no list but a later one.
func (g *Group) sweep(ctx context.Context) ([]int, error) {
	thaw, err := g.freeze(ctx)
	if err != nil {
		return nil, err
	}
	ps, err := g.Pids()
	if err == nil {
		for _, pid := range ps {
			if pid == os.Getpid() {
				// A thread of ours that started a task and could not
				// leave its group (EnterThread) is on its way out:
				// its process is the agent.
				continue
			}
			if kerr := unix.Kill(pid, unix.SIGKILL); kerr != nil && !errors.Is(kerr, unix.ESRCH) {
				err = fmt.Errorf("kill %d: %w", pid, kerr)
				break
			}
		}
	}
	if terr := thaw(); terr != nil && err == nil {
		err = terr
	}
	if err == nil {
		ps, err = g.Pids()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return liveOnly(ps), nil
}

// holdForks sets the group's pids.max to 0 and returns what puts back the
// value it replaced. The kernel refuses a new task past pids.max even when
// the group already holds more, so from the write on no process in the
// group can fork or clone: the freezer's guarantee without the freezer,
// and without its 100 ms deadline. 0 rather than the current count, which
// would let a fork in again once a killed process is gone.
func (g *Group) holdForks() (release func() error, err error) {
	file := filepath.Join(g.pids, "pids.max")
	was, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading pids.max: %w", err)
	}
	was = bytes.TrimSpace(was)
	if err := writeFile(file, "0"); err != nil {
		return nil, fmt.Errorf("holding forks: %w", err)
	}
	return func() error {
		if err := writeBytes(file, was); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("putting pids.max back to %s: %w", was, err)
		}
		return nil
	}, nil
}

// freeze stops every process in the group and returns the function that
// lets them run again. Freezing waits at most 100 ms for the kernel to
// report FROZEN: a task stuck in the kernel (D state on a dead NFS mount)
// can keep a group FREEZING for ever, and killing is still right then.
func (g *Group) freeze(ctx context.Context) (func() error, error) {
	var file, frozenVal, thawVal string
	var frozen func() bool
	switch {
	case g.m.version == 1 && g.freezer != "":
		file = filepath.Join(g.freezer, "freezer.state")
		frozenVal, thawVal = "FROZEN", "THAWED"
		frozen = func() bool {
			b, err := os.ReadFile(file)
			return err == nil && strings.TrimSpace(string(b)) == "FROZEN"
		}
	case g.m.version == 2:
		file = filepath.Join(g.dirs[0], "cgroup.freeze")
		if _, err := os.Stat(file); err != nil {
			return func() error { return nil }, nil
		}
		frozenVal, thawVal = "1", "0"
		events := filepath.Join(g.dirs[0], "cgroup.events")
		frozen = func() bool {
			kv, err := readKV(events)
			return err == nil && kv["frozen"] == 1
		}
	default:
		return func() error { return nil }, nil
	}
	thaw := func() error {
		if err := writeFile(file, thawVal); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("thawing: %w", err)
		}
		return nil
	}
	if err := writeFile(file, frozenVal); err != nil {
		return nil, fmt.Errorf("freezing: %w", err)
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for !frozen() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Microsecond)
	}
	return thaw, nil
}

// liveOnly drops zombies and vanished processes from a pid list.
//
// The agent itself is dropped too: the sweep never signals it (a thread
// that could not leave a task's group after a fork leaves its process
// listed there), and waiting for it to go would wait for ever.
func liveOnly(ps []int) []int {
	out := ps[:0:0]
	self := os.Getpid()
	for _, pid := range ps {
		if pid != self && processLive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// processLive reads the state letter of /proc/<pid>/stat: Z (zombie) and
// X (dead) are not live, and neither is a pid without a /proc entry.
func processLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "1234 (comm with spaces) S ..." — the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	st := b[i+2]
	return st != 'Z' && st != 'X'
}

// OOMKills is the number of processes the kernel's OOM killer has killed in
// the group (v1 memory.oom_control "oom_kill", Linux 4.13; v2 memory.events
// "oom_kill"). Compare it before and after a task ends by SIGKILL to tell an
// OOM kill from a kill -9: the exit status alone cannot.
func (g *Group) OOMKills() (uint64, error) {
	if g.mem == "" {
		return 0, fmt.Errorf("cgroup %s: counting OOM kills needs the memory controller: %w", g.path, errors.ErrUnsupported)
	}
	file := "memory.events"
	if g.m.version == 1 {
		file = "memory.oom_control"
	}
	kv, err := readKV(filepath.Join(g.mem, file))
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", g.path, err)
	}
	n, ok := kv["oom_kill"]
	if !ok {
		return 0, fmt.Errorf("cgroup %s: %s has no oom_kill count (kernel older than 4.13?): %w", g.path, file, errors.ErrUnsupported)
	}
	return n, nil
}

// Destroy removes the group from every hierarchy. The group must be empty
// (Kill first): with a live process in it Destroy removes nothing and says
// which processes, so a group is never left half removed for that reason.
// A group already gone is not an error. Processes just killed keep a
// cgroup busy until they have finished exiting, so a busy group is retried
// for up to half a second in all.
func (g *Group) Destroy() error {
	deadline := time.Now().Add(500 * time.Millisecond)
	wait := 500 * time.Microsecond
	pause := func() bool {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		wait = min(wait*2, 50*time.Millisecond)
		return true
	}
	for {
		ps, err := g.Pids()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("destroying cgroup %s: %w", g.path, err)
		}
		live := liveOnly(ps)
		if len(live) == 0 {
			break
		}
		if !pause() {
			return fmt.Errorf("destroying cgroup %s: processes %v still in it, Kill first: %w", g.path, live, unix.EBUSY)
		}
	}
	var errs []error
	for _, dir := range slices.Backward(g.dirs) {
		for {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if errors.Is(err, unix.EBUSY) && pause() {
				continue
			}
			errs = append(errs, fmt.Errorf("rmdir %s: %w", dir, err))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroying cgroup %s: %w", g.path, err)
	}
	g.m.logger.Debug("cgroup removed", "path", g.path)
	return nil
}

// writeLimits writes the limits into the group's files.
func (g *Group) writeLimits(l Limits) error {
	hard, soft := l.memoryBytes()
	shares := CPUShares(l.CPU)
	switch g.m.version {
	case 1:
		mem := g.mem
		if err := writeFile(filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatInt(hard, 10)); err != nil {
			return fmt.Errorf("memory limit: %w", err)
		}
		if err := writeFile(filepath.Join(mem, "memory.soft_limit_in_bytes"), strconv.FormatInt(soft, 10)); err != nil {
			return fmt.Errorf("memory reservation: %w", err)
		}
		// As Nomad does on v1: a task past its limit is OOM-killed instead
		// of being swapped out slowly. Older kernels may refuse; that is
		// not worth failing the task for.
		if err := writeFile(filepath.Join(mem, "memory.swappiness"), "0"); err != nil {
			g.m.logger.Debug("cannot disable swapping for the task", "path", g.path, "error", err)
		}
		if g.cpu != "" {
			if err := writeFile(filepath.Join(g.cpu, "cpu.shares"), strconv.FormatUint(shares, 10)); err != nil {
				return fmt.Errorf("cpu shares: %w", err)
			}
		}
	case 2:
		if g.mem != "" {
			max := "max"
			if hard >= 0 {
				max = strconv.FormatInt(hard, 10)
			}
			if err := writeFile(filepath.Join(g.mem, "memory.max"), max); err != nil {
				return fmt.Errorf("memory limit: %w", err)
			}
			if err := writeFile(filepath.Join(g.mem, "memory.low"), strconv.FormatInt(max64(soft, 0), 10)); err != nil {
				return fmt.Errorf("memory reservation: %w", err)
			}
		} else {
			g.m.logger.Debug("no memory controller: memory limits not written", "path", g.path)
		}
		if g.cpu != "" {
			if err := writeFile(filepath.Join(g.cpu, "cpu.weight"), strconv.FormatUint(CPUWeight(shares), 10)); err != nil {
				return fmt.Errorf("cpu weight: %w", err)
			}
		}
	}
	// pids.max is the same file on v1 and v2. "max" is written for no
	// limit too, so that a group reused by the next launch loses a limit
	// the agent's configuration no longer sets.
	if g.pids != "" {
		max := "max"
		if l.PidsLimit > 0 {
			max = strconv.Itoa(l.PidsLimit)
		}
		if err := writeFile(filepath.Join(g.pids, "pids.max"), max); err != nil {
			return fmt.Errorf("pids limit: %w", err)
		}
	}
	return nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// writeFile writes a value to an existing cgroupfs file. It never creates
// the file: a missing interface file means a missing controller, and
// creating a plain file in its place would hide that.
func writeFile(path, val string) error {
	return writeBytes(path, []byte(val))
}

func writeBytes(path string, val []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	_, err = unix.Write(fd, val)
	cerr := unix.Close(fd)
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", val, path, err)
	}
	if cerr != nil {
		return fmt.Errorf("writing %q to %s: %w", val, path, cerr)
	}
	return nil
}

// readPids parses a cgroup.procs file.
func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: bad pid %q", path, f)
		}
		out = append(out, pid)
	}
	return out, nil
}

// readKV parses the "key value" lines of memory.stat, cpu.stat,
// memory.events, memory.oom_control and cgroup.events. Lines whose value is
// not a number are skipped.
func readKV(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKV(b), nil
}

func parseKV(b []byte) map[string]uint64 {
	kv := map[string]uint64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		kv[k] = n
	}
	return kv
}

// readUint reads a file holding one number.
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return ^uint64(0), nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
