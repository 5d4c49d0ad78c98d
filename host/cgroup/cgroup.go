package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// DefaultParent is the cgroup task cgroups are made under when
// Options.Parent is empty. Nomad uses "/nomad" (v1) and "nomad.slice" (v2);
// ours is named after us so the two agents never share a tree.
const DefaultParent = "/pluginhost"

// v1Controllers are the v1 hierarchies a task joins, in the order they are
// made and written. memory is required (limits, OOM count, memory stats);
// the others are used when mounted: cpu for cpu.shares and throttling,
// cpuacct for CPU time, freezer so Kill can stop forks during its sweep,
// pids for the process limit (pids.max) and count. cpuset is left out on
// purpose: a v1 cpuset cgroup is unusable until cpuset.cpus and
// cpuset.mems are copied into it, and nothing here reserves cores.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "freezer", "pids"}

// v2Controllers are the controllers enabled for task cgroups on v2, when
// the root offers them.
var v2Controllers = []string{"memory", "cpu", "pids"}

// Options say where cgroups live. The zero value detects everything.
type Options struct {
	// Parent is the cgroup under which task cgroups are made, absolute
	// within each hierarchy (config key cgroup_parent). Default
	// DefaultParent.
	Parent string
	// Mode forces "v1" or "v2". "" detects: a cgroup2 mount whose root
	// offers the memory controller → v2; else a v1 memory hierarchy → v1;
	// else disabled.
	Mode string
	// Root, if set, is used as the v2 unified root instead of the real
	// mount, and the memory controller is not required there: tests point
	// it at a temp dir laid out like cgroupfs or at a controller-less
	// cgroup2 mount (a hybrid host's /sys/fs/cgroup/unified) where
	// membership, cgroup.kill and rmdir are real.
	Root string
	// V1Roots, if set, maps v1 controller names ("memory", "cpu",
	// "cpuacct", "freezer", "pids") to hierarchy directories instead of the
	// real mounts. "memory" is required.
	V1Roots map[string]string
}

// Info describes the setup for /v1/agent/self and `pluginhost agent`.
type Info struct {
	Version int    `json:"version"`
	Parent  string `json:"parent,omitempty"`
	// Controllers are the controllers task cgroups get.
	Controllers []string `json:"controllers,omitempty"`
	// Hierarchies are the directories a task cgroup is made in (one on v2).
	Hierarchies []string `json:"hierarchies,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

// Manager makes and finds task cgroups. It is immutable after Detect and
// safe for concurrent use.
type Manager struct {
	logger  hclog.Logger
	version int
	reason  string
	parent  string

	// v2: the unified root and the controllers enabled for task cgroups.
	root        string
	controllers []string

	// v1: controller → hierarchy root, and the distinct hierarchy roots
	// (co-mounted controllers such as "cpu,cpuacct" share one directory) in
	// v1Controllers order, memory first.
	v1    map[string]string
	hiers []string
}

// Detect finds a usable cgroup setup. It never fails: a Manager whose
// Enabled is false says why in Reason, and the agent runs tasks without
// containment, as Nomad's raw_exec does without cgroups.
func Detect(logger hclog.Logger, opts Options) *Manager {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	m := &Manager{logger: logger.Named("cgroup")}
	parent, err := cleanParent(opts.Parent)
	if err != nil {
		m.reason = err.Error()
		return m
	}
	m.parent = parent

	if err := m.detect(opts); err != nil {
		m.version, m.root, m.controllers, m.v1, m.hiers = 0, "", nil, nil, nil
		m.reason = err.Error()
		m.logger.Info("cgroups disabled", "reason", m.reason)
		return m
	}
	m.logger.Debug("cgroups enabled", "version", m.version, "parent", m.parent,
		"controllers", m.Info().Controllers, "hierarchies", m.Info().Hierarchies)
	if !m.has("pids") {
		// Said once here rather than at every launch: no task's process
		// count can be limited or read on this machine.
		m.logger.Warn("no pids controller: tasks' processes and threads are not limited (pids_limit) or counted",
			"version", m.version)
	}
	return m
}

func (m *Manager) detect(opts Options) error {
	mode := opts.Mode
	switch {
	case mode == "" && opts.Root != "":
		mode = "v2"
	case mode == "" && len(opts.V1Roots) > 0:
		mode = "v1"
	}
	fake := (mode == "v2" && opts.Root != "") || (mode == "v1" && len(opts.V1Roots) > 0)
	if !fake && os.Geteuid() != 0 {
		return fmt.Errorf("not running as root (euid %d): making cgroups and moving processes into them needs root", os.Geteuid())
	}

	var mounts []mount
	if !fake {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return fmt.Errorf("finding cgroup mounts: %w", err)
		}
		mounts, err = cgroupMounts(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	v2root := opts.Root
	v1roots := opts.V1Roots
	if !fake {
		v1roots = map[string]string{}
		for _, mt := range mounts {
			if mt.v2 {
				if v2root == "" {
					v2root = mt.dir
				}
				continue
			}
			for _, c := range mt.controllers {
				if slices.Contains(v1Controllers, c) {
					v1roots[c] = mt.dir
				}
			}
		}
	}

	switch mode {
	case "v2":
		if v2root == "" {
			return errors.New("cgroup v2 forced but no cgroup2 filesystem is mounted")
		}
		return m.setupV2(v2root, opts.Root == "")
	case "v1":
		return m.setupV1(v1roots)
	case "":
		var why []string
		if v2root != "" {
			err := m.setupV2(v2root, true)
			if err == nil {
				return nil
			}
			why = append(why, err.Error())
		} else {
			why = append(why, "no cgroup2 filesystem mounted")
		}
		if len(v1roots) > 0 {
			err := m.setupV1(v1roots)
			if err == nil {
				return nil
			}
			why = append(why, err.Error())
		} else {
			why = append(why, "no cgroup v1 controller mounted")
		}
		return fmt.Errorf("no usable cgroups: %s", strings.Join(why, "; "))
	default:
		return fmt.Errorf("unknown cgroup mode %q: want \"v1\", \"v2\" or \"\"", mode)
	}
}

func (m *Manager) setupV2(root string, requireMemory bool) error {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2 at %s: %w", root, err)
	}
	avail := strings.Fields(string(b))
	var ctrl []string
	for _, c := range v2Controllers {
		if slices.Contains(avail, c) {
			ctrl = append(ctrl, c)
		}
	}
	if requireMemory && !slices.Contains(ctrl, "memory") {
		return fmt.Errorf("cgroup v2 at %s has no memory controller (offers %q)", root, avail)
	}
	m.version, m.root, m.controllers = 2, root, ctrl
	return nil
}

func (m *Manager) setupV1(roots map[string]string) error {
	memRoot := roots["memory"]
	if memRoot == "" {
		return errors.New("cgroup v1 has no memory hierarchy mounted")
	}
	v1 := map[string]string{}
	var hiers []string
	for _, c := range v1Controllers {
		dir := roots[c]
		if dir == "" {
			continue
		}
		if _, err := os.Stat(dir); err != nil {
			if c == "memory" {
				return fmt.Errorf("cgroup v1 memory hierarchy: %w", err)
			}
			m.logger.Warn("cgroup v1 hierarchy unusable, left out", "controller", c, "error", err)
			continue
		}
		v1[c] = dir
		if !slices.Contains(hiers, dir) {
			hiers = append(hiers, dir)
		}
	}
	m.version, m.v1, m.hiers = 1, v1, hiers
	return nil
}

// Enabled says whether tasks get cgroups.
func (m *Manager) Enabled() bool { return m.version != 0 }

// Version is 1 or 2, or 0 when disabled.
func (m *Manager) Version() int { return m.version }

// Reason says why cgroups are disabled; "" when enabled.
func (m *Manager) Reason() string { return m.reason }

// Parent is the cleaned parent cgroup path, e.g. "/pluginhost".
func (m *Manager) Parent() string { return m.parent }

// Info describes the setup.
func (m *Manager) Info() Info {
	in := Info{Version: m.version, Parent: m.parent, Reason: m.reason}
	switch m.version {
	case 1:
		for _, c := range v1Controllers {
			if m.v1[c] != "" {
				in.Controllers = append(in.Controllers, c)
			}
		}
		in.Hierarchies = slices.Clone(m.hiers)
	case 2:
		in.Controllers = slices.Clone(m.controllers)
		in.Hierarchies = []string{m.root}
	}
	return in
}

func (m *Manager) has(controller string) bool {
	switch m.version {
	case 1:
		return m.v1[controller] != ""
	case 2:
		return slices.Contains(m.controllers, controller)
	}
	return false
}

// Limits are a task's resources as written in the job file.
type Limits struct {
	// MemoryMB is the hard limit, or with MemoryMaxMB the reservation
	// (soft limit). 0 means no limit.
	MemoryMB int
	// MemoryMaxMB, when set, is the hard limit (Nomad's memory
	// oversubscription); -1 means no hard limit at all, as in Nomad.
	MemoryMaxMB int
	// CPU is in MHz; it becomes cpu.shares (v1) or cpu.weight (v2). 0
	// leaves the kernel's default weight.
	CPU int
	// PidsLimit is pids.max: how many processes and threads the group may
	// hold at once (the agent's pids_limit, not the job's); a fork or
	// clone past it fails with EAGAIN. 0 means no limit ("max").
	PidsLimit int
}

// MaxPidsLimit is the kernel's PID_MAX_LIMIT, the largest pids.max it
// takes.
const MaxPidsLimit = 1 << 22

func (l Limits) validate() error {
	switch {
	case l.MemoryMB < 0:
		return fmt.Errorf("memory %d MB is negative", l.MemoryMB)
	case l.MemoryMaxMB < -1:
		return fmt.Errorf("memory_max %d MB is negative", l.MemoryMaxMB)
	case l.MemoryMaxMB > 0 && l.MemoryMaxMB < l.MemoryMB:
		return fmt.Errorf("memory_max %d MB is below memory %d MB", l.MemoryMaxMB, l.MemoryMB)
	case l.CPU < 0:
		return fmt.Errorf("cpu %d MHz is negative", l.CPU)
	case l.PidsLimit < 0 || l.PidsLimit > MaxPidsLimit:
		return fmt.Errorf("pids limit %d is not between 0 (none) and %d", l.PidsLimit, MaxPidsLimit)
	}
	return nil
}

// memoryBytes gives the hard and soft limits in bytes, -1 meaning none.
// The rules are Nomad's (drivers/shared/executor/utils.go memoryLimits):
// without memory_max, memory is the hard limit and there is no
// reservation; with it, memory is the reservation and memory_max the hard
// limit, -1 lifting the hard limit.
func (l Limits) memoryBytes() (hard, soft int64) {
	const mb = 1 << 20
	switch {
	case l.MemoryMaxMB == -1:
		hard = -1
		soft = int64(l.MemoryMB) * mb
	case l.MemoryMaxMB > 0:
		hard = int64(l.MemoryMaxMB) * mb
		soft = int64(l.MemoryMB) * mb
	default:
		hard, soft = int64(l.MemoryMB)*mb, -1
		if l.MemoryMB == 0 {
			hard = -1
		}
	}
	if soft == 0 {
		soft = -1
	}
	return hard, soft
}

// Create makes the cgroup for name (e.g. "<allocID>.<task>") under Parent
// in every hierarchy, writes the limits and returns it. An existing group
// is reused and its limits rewritten, so a restarted task or a restored
// agent can call it again. On v2 the controllers are enabled in each
// ancestor's cgroup.subtree_control first: without that the limit files do
// not exist in the task's cgroup.
func (m *Manager) Create(name string, l Limits) (*Group, error) {
	if !m.Enabled() {
		return nil, fmt.Errorf("creating cgroup %q: cgroups disabled: %s", name, m.reason)
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("creating cgroup: %w", err)
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("creating cgroup %q: %w", name, err)
	}
	g := m.group(name)
	var made []string
	undo := func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = unix.Rmdir(made[i])
		}
	}
	if m.version == 2 {
		if err := m.enableV2Controllers(); err != nil {
			return nil, fmt.Errorf("creating cgroup %s: %w", g.path, err)
		}
	}
	for _, dir := range g.dirs {
		err := unix.Mkdir(dir, 0o755)
		if errors.Is(err, unix.ENOENT) {
			// The parent, made by the first task only: a stat of it
			// on every launch costs as much as the mkdir.
			if err = os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				undo()
				return nil, fmt.Errorf("creating cgroup %s: %w", g.path, err)
			}
			err = unix.Mkdir(dir, 0o755)
		}
		switch {
		case err == nil:
			made = append(made, dir)
		case errors.Is(err, unix.EEXIST):
		default:
			undo()
			return nil, fmt.Errorf("creating cgroup %s: mkdir %s: %w", g.path, dir, err)
		}
	}
	if err := g.writeLimits(l); err != nil {
		undo()
		return nil, fmt.Errorf("creating cgroup %s: %w", g.path, err)
	}
	g.fresh = len(made) == len(g.dirs)
	m.logger.Debug("cgroup ready", "path", g.path, "new", len(made) > 0,
		"memory_mb", l.MemoryMB, "memory_max_mb", l.MemoryMaxMB, "cpu", l.CPU, "pids_limit", l.PidsLimit)
	return g, nil
}

// enableV2Controllers writes "+memory +cpu +pids" into the subtree_control
// of the root and of every cgroup down to Parent, making Parent as needed.
// Writing an already enabled controller is a no-op for the kernel.
func (m *Manager) enableV2Controllers() error {
	if len(m.controllers) == 0 {
		return os.MkdirAll(filepath.Join(m.root, m.parent), 0o755)
	}
	var b strings.Builder
	for i, c := range m.controllers {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + c)
	}
	want := b.String()
	dir := m.root
	parts := strings.Split(strings.Trim(m.parent, "/"), "/")
	for i := 0; ; i++ {
		if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), want); err != nil {
			return fmt.Errorf("enabling controllers: %w", err)
		}
		if i == len(parts) {
			return nil
		}
		dir = filepath.Join(dir, parts[i])
		if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("making parent cgroup %s: %w", dir, err)
		}
	}
}

// group lays out the Group for name without touching the filesystem.
func (m *Manager) group(name string) *Group { return m.groupAt(m.parent, name) }

// groupAt is group under parent, which is m.parent but for a group made
// under an earlier cgroup_parent (see Open).
func (m *Manager) groupAt(parent, name string) *Group {
	g := &Group{m: m, name: name, path: path.Join(parent, name), killTurn: make(chan struct{}, 1)}
	switch m.version {
	case 2:
		dir := filepath.Join(m.root, g.path)
		g.dirs = []string{dir}
		if m.has("memory") {
			g.mem = dir
		}
		if m.has("cpu") {
			g.cpu = dir
		}
		if m.has("pids") {
			g.pids = dir
		}
		g.cpuacct = dir // cpu.stat's usage lines exist without the controller
	case 1:
		byRoot := map[string]string{}
		for _, root := range m.hiers {
			dir := filepath.Join(root, g.path)
			byRoot[root] = dir
			g.dirs = append(g.dirs, dir)
		}
		g.mem = byRoot[m.v1["memory"]]
		g.cpu = byRoot[m.v1["cpu"]]
		g.cpuacct = byRoot[m.v1["cpuacct"]]
		g.freezer = byRoot[m.v1["freezer"]]
		g.pids = byRoot[m.v1["pids"]]
	}
	g.procs = make([]string, len(g.dirs))
	for i, d := range g.dirs {
		g.procs[i] = filepath.Join(d, "cgroup.procs")
	}
	return g
}

// Open finds a task cgroup by the path Group.Path returned, typically
// after an agent restart. A group gone from every hierarchy is an error
// wrapping fs.ErrNotExist. On v1 a group missing from some hierarchies (an
// agent killed in the middle of Create or Destroy) is opened without them,
// with a warning, so that it can still be killed and destroyed; its
// limits, OOM count and stats need the memory hierarchy.
//
// A group made under another parent (cgroup_parent changed while the task
// ran) is opened where it is, as Nomad's executor keeps a task in the
// cgroup it started in: the task stays contained, and its leftovers are
// killed when it ends. Only a group directly in the root cgroup is refused.
func (m *Manager) Open(p string) (*Group, error) {
	if !m.Enabled() {
		return nil, fmt.Errorf("opening cgroup %s: cgroups disabled: %s", p, m.reason)
	}
	clean := path.Clean("/" + p)
	parent, name := path.Dir(clean), path.Base(clean)
	if parent == "/" {
		return nil, fmt.Errorf("opening cgroup %s: a task cgroup is never directly in the root cgroup", p)
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("opening cgroup %s: %w", p, err)
	}
	g := m.groupAt(parent, name)
	var dirs, procs []string
	var firstErr error
	for i, d := range g.dirs {
		if _, err := os.Stat(d); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			for _, c := range []*string{&g.mem, &g.cpu, &g.cpuacct, &g.freezer, &g.pids} {
				if *c == d {
					*c = ""
				}
			}
			continue
		}
		dirs, procs = append(dirs, d), append(procs, g.procs[i])
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("opening cgroup %s: %w", g.path, firstErr)
	}
	if len(dirs) < len(g.dirs) {
		m.logger.Warn("task cgroup missing from some hierarchies, opened without them",
			"path", g.path, "found", dirs, "error", firstErr)
	}
	if parent != m.parent {
		m.logger.Info("task cgroup is under an earlier cgroup_parent; the task stays in it",
			"path", g.path, "cgroup_parent", m.parent)
	}
	g.dirs, g.procs = dirs, procs
	return g, nil
}

// Leftovers lists the task cgroups under Parent, as Group.Path values, in
// any hierarchy (a group half made or half removed by a killed agent shows
// up too). The caller decides which belong to live tasks.
func (m *Manager) Leftovers() ([]string, error) {
	if !m.Enabled() {
		return nil, nil
	}
	roots := m.hiers
	if m.version == 2 {
		roots = []string{m.root}
	}
	seen := map[string]bool{}
	for _, root := range roots {
		ents, err := os.ReadDir(filepath.Join(root, m.parent))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing task cgroups: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				seen[path.Join(m.parent, e.Name())] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

func cleanParent(p string) (string, error) {
	if p == "" {
		p = DefaultParent
	}
	c := path.Clean("/" + p)
	if c == "/" {
		return "", fmt.Errorf("cgroup_parent %q: task cgroups cannot live at the root of a hierarchy", p)
	}
	for part := range strings.SplitSeq(strings.Trim(c, "/"), "/") {
		if err := checkName(part); err != nil {
			return "", fmt.Errorf("cgroup_parent %q: %w", p, err)
		}
	}
	return c, nil
}

// checkName refuses names that are not one path element or that would
// clash with a cgroupfs interface file (v2 puts "memory.max" and friends
// in the same directory as child cgroups).
func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("cgroup name %q is not a name", name)
	case strings.ContainsAny(name, "/\x00\n"):
		return fmt.Errorf("cgroup name %q has a slash, NUL or newline", name)
	case strings.HasPrefix(name, "cgroup.") || strings.HasPrefix(name, "memory.") ||
		strings.HasPrefix(name, "cpu.") || strings.HasPrefix(name, "pids.") ||
		strings.HasPrefix(name, "cpuacct.") || strings.HasPrefix(name, "freezer."):
		return fmt.Errorf("cgroup name %q looks like a cgroupfs interface file", name)
	}
	return nil
}

// Warnings say, at every job run and validate, that this machine cannot
// enforce a job's resources: the job would behave otherwise under Nomad,
// which kills a task past its memory. None when cgroups are in use (or m
// is nil: nobody asked).
func (m *Manager) Warnings() []string {
	if m == nil || m.Enabled() {
		return nil
	}
	return []string{"resources are not enforced and a stop kills only each task's process group: cgroups cannot be used on this machine (" + m.Reason() + ")"}
}
