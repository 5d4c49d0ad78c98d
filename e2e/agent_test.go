package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// startTimeout bounds an agent's start-up: exec, state open, restore, API.
const startTimeout = 30 * time.Second

// env is one test's world: a short temporary root holding the agent's
// config and data dir, reused by every agent the test starts, so that a
// restarted agent finds its predecessor's state.
type env struct {
	t       testing.TB
	bin     string
	root    string
	dataDir string
	cfgPath string
	sock    string
	// cgroupParent holds this env's task cgroups, apart from every other
	// test's, so that what a test leaves behind is its own.
	cgroupParent string
	// noCgroups starts the agent where no cgroup file system is mounted
	// (see newEnvNoCgroups).
	noCgroups bool
	// softNofile, when set, is the soft RLIMIT_NOFILE the agent is
	// started with, as a shell's `ulimit -Sn` would give it.
	softNofile uint64

	// extraEnv is appended to every agent's environment (later values
	// win), e.g. an XDG_RUNTIME_DIR of the test's own.
	extraEnv []string
	// extraFiles are inherited by every agent from fd 3 on, as a shell's
	// 7</ would be.
	extraFiles []*os.File
	// agentArgs, when set, replace "agent -config <cfgPath>" (agent -dev).
	agentArgs []string

	mu     sync.Mutex
	agents []*agentProc
}

// newEnv creates the root and registers the cleanup that kills everything
// the test started. extraConfig is appended to the config file.
func newEnv(t testing.TB, extraConfig string) *env {
	t.Helper()
	return newEnvAt(t, "", extraConfig)
}

// newEnvAt is newEnv with a data dir under root named sub ("" = "d"), for
// tests that need a long data dir.
func newEnvAt(t testing.TB, sub, extraConfig string) *env {
	t.Helper()
	// The agent starts the standalone log shipper when it sits next to
	// the agent's binary, as `make build` and a release put it.
	testbin.MustPath(t, "pluginhost-logmon")
	testbin.MustPath(t, "pluginhost-nsexec")
	bin := testbin.MustPath(t, "pluginhost")
	root, err := os.MkdirTemp("", "ph-e2e-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	if sub == "" {
		sub = "d"
	}
	e := &env{t: t, bin: bin, root: root, dataDir: filepath.Join(root, sub), cfgPath: filepath.Join(root, "agent.hcl"),
		cgroupParent: "/" + filepath.Base(root)}
	// The API socket gets its own short path so that a long data dir
	// tests only the plugin socket fallback.
	e.sock = filepath.Join(root, "api.sock")
	t.Cleanup(e.cleanup)
	// Tests log at debug, for their failure output; benchmarks measure
	// the agent as it runs by default, at info.
	level := "debug"
	if _, ok := t.(*testing.B); ok {
		level = "info"
	}
	cfg := fmt.Sprintf("data_dir = %q\naddr = %q\nlog_level = %q\nnode_name = \"e2e\"\ncgroup_parent = %q\n%s\n",
		e.dataDir, "unix://"+e.sock, level, e.cgroupParent, extraConfig)
	if err := os.WriteFile(e.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatalf("write config: %v", err)
	}
	return e
}

// setCgroupParent makes the next agent use parent as its cgroup_parent
// (e.cgroupParent stays the first one, where earlier launches' groups
// are); the test's cleanup removes both.
func (e *env) setCgroupParent(t testing.TB, parent string) {
	t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("cgroup_parent = %q\n", e.cgroupParent)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("config has no %q", old)
	}
	b = bytes.Replace(b, []byte(old), []byte(fmt.Sprintf("cgroup_parent = %q\n", parent)), 1)
	if err := os.WriteFile(e.cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroups(t, parent) })
}

// addr is the agent's API address.
func (e *env) addr() string { return "unix://" + e.sock }

// cleanup kills every agent, then every process that mentions the root in
// its arguments or environment, then removes the root.
func (e *env) cleanup() {
	e.mu.Lock()
	agents := e.agents
	e.mu.Unlock()
	for _, a := range agents {
		a.kill()
	}
	killMatching(e.root)
	removeCgroups(e.t, e.cgroupParent)
	unmountUnder(e.t, e.root)
	if e.t.Failed() {
		for _, a := range agents {
			e.t.Logf("agent (pid %d) output:\n%s", a.pid(), a.output())
		}
	}
	if err := os.RemoveAll(e.root); err != nil {
		e.t.Logf("remove %s: %v", e.root, err)
	}
}

// agentProc is one run of the agent binary.
type agentProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	client *api.Client
	exited chan struct{}
	// exitErr is cmd.Wait's result, valid once exited is closed.
	exitErr error

	mu  sync.Mutex
	out bytes.Buffer
}

func (a *agentProc) pid() int { return a.cmd.Process.Pid }

// output is everything the agent printed so far.
func (a *agentProc) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String()
}

// kill sends SIGKILL to the agent alone (its tasks run in their own
// sessions) and waits for it to be reaped.
func (a *agentProc) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
	a.client.Close()
}

// lockedWriter appends to the agent's output buffer.
type lockedWriter struct{ a *agentProc }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	return w.a.out.Write(p)
}

// launch starts an agent on the env's config without waiting for it.
// started is closed when the agent prints that its API is up.
func (e *env) launch() (a *agentProc, started <-chan struct{}) {
	e.t.Helper()
	args := []string{"agent", "-config", e.cfgPath}
	if e.agentArgs != nil {
		args = e.agentArgs
	}
	cmd := exec.Command(e.bin, args...)
	if e.noCgroups {
		// unshare and the shell exec in turn: the agent keeps the pid.
		cmd = exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
			`umount -l /sys/fs/cgroup && exec "$0" "$@"`, e.bin, "agent", "-config", e.cfgPath)
	}
	if e.softNofile > 0 {
		// The shell execs the agent: it keeps the pid.
		cmd = exec.Command("/bin/sh", "-c", `ulimit -S -n "$0" && exec "$@"`,
			strconv.FormatUint(e.softNofile, 10), e.bin, "agent", "-config", e.cfgPath)
	}
	cmd.Dir = e.root
	cmd.Env = append(append(os.Environ(), api.EnvAddr+"="+e.addr()), e.extraEnv...)
	cmd.ExtraFiles = e.extraFiles
	a = &agentProc{t: e.t, cmd: cmd, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatalf("agent stdout: %v", err)
	}
	cmd.Stderr = lockedWriter{a}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start agent: %v", err)
	}
	client, err := api.NewClient(e.addr())
	if err != nil {
		_ = cmd.Process.Kill()
		e.t.Fatalf("api client: %v", err)
	}
	a.client = client
	e.mu.Lock()
	e.agents = append(e.agents, a)
	e.mu.Unlock()
	st := make(chan struct{})
	go func() {
		// Owned by the agent process: it ends when the agent's stdout
		// closes, that is when the agent exits.
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = lockedWriter{a}.Write([]byte(line + "\n"))
			if !once && strings.Contains(line, "pluginhost agent started") {
				once = true
				close(st)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		a.exitErr = cmd.Wait()
		close(a.exited)
	}()
	return a, st
}

// start launches an agent and waits until its API answers and it reports
// ready.
func (e *env) start() *agentProc {
	e.t.Helper()
	a, started := e.launch()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	select {
	case <-started:
	case <-a.exited:
		e.t.Fatalf("agent exited during start-up (%v):\n%s", a.exitErr, a.output())
	case <-ctx.Done():
		e.t.Fatalf("agent did not start within %s:\n%s", startTimeout, a.output())
	}
	if err := a.waitReady(ctx); err != nil {
		e.t.Fatalf("agent not ready: %v\n%s", err, a.output())
	}
	return a
}

// waitReady subscribes to the Agent topic, then asks Health, then waits for
// the Ready event if the agent was not ready yet.
func (a *agentProc) waitReady(ctx context.Context) error {
	es, err := a.client.Events(ctx, api.TopicAgent)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	defer es.Close()
	ok, err := a.client.Health(ctx)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	for !ok {
		ev, err := es.Next(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the Ready event: %w", err)
		}
		ok = ev.Type == "Ready"
	}
	return nil
}

// recheck is how often waitFor re-evaluates its condition without an
// event. The agent publishes no event when a task turns dead after its last
// task event (taskrunner's finish sets the state after emitting Killed or
// Terminated), so a waiter that saw the event before the state changed would
// otherwise wait forever; see the e2e report.
const recheck = 250 * time.Millisecond

// waitFor re-evaluates cond after every event of the given topics (and every
// recheck) until it holds or ctx ends. It subscribes before the first
// evaluation, so a change between the check and the subscription cannot be
// missed.
func (a *agentProc) waitFor(ctx context.Context, what string, cond func(ctx context.Context) (bool, error), topics ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	es, err := a.client.Events(ctx, topics...)
	if err != nil {
		return fmt.Errorf("wait for %s: subscribe: %w", what, err)
	}
	evs := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		// Owned by this call: Close below ends Next.
		defer close(done)
		for {
			_, err := es.Next(ctx)
			select {
			case evs <- err:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		_ = es.Close()
		<-done
	}()
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case err := <-evs:
			if err != nil {
				return fmt.Errorf("wait for %s: event stream: %w", what, err)
			}
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		}
	}
}

// mustWait is waitFor that fails the test, with a default deadline.
func (a *agentProc) mustWait(what string, d time.Duration, cond func(ctx context.Context) (bool, error), topics ...string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := a.waitFor(ctx, what, cond, topics...); err != nil {
		a.t.Fatalf("%v\nagent output:\n%s", err, tail(a.output(), 4000))
	}
}

// allocCond is a condition on one allocation.
func (a *agentProc) allocCond(id string, pred func(*api.Allocation) bool) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		al, err := a.client.Allocation(ctx, id)
		if err != nil {
			return false, err
		}
		return pred(al), nil
	}
}

// waitAlloc waits until pred holds for the allocation.
func (a *agentProc) waitAlloc(id, what string, pred func(*api.Allocation) bool) *api.Allocation {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	werr := a.waitFor(ctx, fmt.Sprintf("allocation %s: %s", short(id), what), a.allocCond(id, pred), api.TopicAllocation, api.TopicTask)
	al, err := a.client.Allocation(context.Background(), id)
	if err != nil {
		a.t.Fatalf("allocation %s: %v (wait: %v)", id, err, werr)
	}
	if werr != nil {
		a.t.Fatalf("%v\nallocation is %s/%s; %s\nagent output:\n%s", werr, al.ClientStatus, al.DesiredStatus, allocSummary(al), tail(a.output(), 4000))
	}
	return al
}

// allocSummary renders every task's state and events for failure messages.
func allocSummary(al *api.Allocation) string {
	var b strings.Builder
	for _, task := range al.Tasks {
		st := "<none>"
		if ts := al.TaskStates[task]; ts != nil {
			st = ts.State
		}
		fmt.Fprintf(&b, "task %s is %s: %s\n", task, st, eventSummary(al, task))
	}
	return b.String()
}

// runJob submits job source and returns the allocation IDs it created.
func (a *agentProc) runJob(name, src string) []string {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := a.client.RegisterJobSource(ctx, name+".hcl", []byte(src))
	if err != nil {
		a.t.Fatalf("register %s: %v", name, err)
	}
	if len(resp.AllocIDs) == 0 {
		a.t.Fatalf("register %s: no allocations created", name)
	}
	return resp.AllocIDs
}

// stopJob stops a job and waits for the stop to finish.
func (a *agentProc) stopJob(id string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.client.StopJob(ctx, id, false); err != nil {
		a.t.Fatalf("stop job %s: %v", id, err)
	}
}

// Predicates on allocations.

func running(task string) func(*api.Allocation) bool {
	return func(al *api.Allocation) bool {
		ts := al.TaskStates[task]
		return al.ClientStatus == api.AllocClientStatusRunning && ts != nil && ts.State == api.TaskStateRunning
	}
}

func taskDead(task string) func(*api.Allocation) bool {
	return func(al *api.Allocation) bool {
		ts := al.TaskStates[task]
		return ts != nil && ts.State == api.TaskStateDead
	}
}

// hasEvent reports whether the task has n events of the given type.
func hasEvents(task, typ string, n int) func(*api.Allocation) bool {
	return func(al *api.Allocation) bool { return len(events(al, task, typ)) >= n }
}

func and(ps ...func(*api.Allocation) bool) func(*api.Allocation) bool {
	return func(al *api.Allocation) bool {
		for _, p := range ps {
			if !p(al) {
				return false
			}
		}
		return true
	}
}

// events returns the task's events of type typ ("" = all), oldest first.
func events(al *api.Allocation, task, typ string) []*api.TaskEvent {
	ts := al.TaskStates[task]
	if ts == nil {
		return nil
	}
	var out []*api.TaskEvent
	for _, ev := range ts.Events {
		if typ == "" || ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// lastPid is the pid named by the task's most recent Started or Reattached
// event: the only place the API reports a pid.
func lastPid(al *api.Allocation, task string) int {
	pid := 0
	var latest int64
	for _, ev := range events(al, task, "") {
		if ev.Type != api.TaskStarted && ev.Type != "Reattached" {
			continue
		}
		i := strings.LastIndex(ev.DisplayMessage, "(pid ")
		if i < 0 || ev.Time < latest {
			continue
		}
		var p int
		if _, err := fmt.Sscanf(ev.DisplayMessage[i:], "(pid %d)", &p); err == nil {
			pid, latest = p, ev.Time
		}
	}
	return pid
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
