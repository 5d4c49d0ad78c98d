package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// The chaos test's knobs. They are registered for the whole package so that
// `go test ./e2e -run TestChaos -chaos.rounds=100 -chaos.seed=7` works.
var (
	chaosSeed      = flag.Uint64("chaos.seed", 1, "TestChaos: seed of the random operations and kill moments")
	chaosRounds    = flag.Int("chaos.rounds", 4, "TestChaos: rounds of churn, kill -9 and restart")
	chaosKeepGoing = flag.Bool("chaos.keepgoing", false, "TestChaos: after a failed round, purge the failing jobs and go on (to count failures) instead of stopping")
	chaosSkip      = flag.String("chaos.skip", "", "TestChaos: comma-separated checks not to fail on (start, pids, orphans, lost, spec, version, plugins, cgroups); for debugging only")
)

// The checks TestChaos makes after every restart, by the name failures are
// reported and counted under.
const (
	checkStart   = "start"   // the agent starts and reports ready
	checkPids    = "pids"    // one top process per running task, the recorded pid
	checkOrphans = "orphans" // no task process the agent does not account for
	checkLost    = "lost"    // accepted jobs and their allocations are still known
	checkSpec    = "spec"    // a job runs its last accepted spec only, whole, with its count
	checkVersion = "version" // Job.Version counts accepted changes; allocations carry it
	checkPlugins = "plugins" // running plugin jobs are healthy and active, stopped ones gone
	checkCgroups = "cgroups" // a running task is in its own cgroup; no other task cgroup exists
	// checkNote marks what is worth reporting but not a failure.
	checkNote = "note"
)

var allChecks = []string{checkStart, checkPids, checkOrphans, checkLost, checkSpec, checkVersion, checkPlugins, checkCgroups}

const (
	// chaosSettle bounds the wait for the state to converge after a
	// restart. Convergence takes a restart delay (1s), a plugin
	// fingerprint (1s) and the agent's start; the rest is slack for a
	// loaded CI machine.
	chaosSettle = 60 * time.Second
	// chaosQuiet is how long a failing state must have seen no event
	// before it counts as converged (and the failure as real). Everything
	// that still changes after a restart announces itself with an event
	// within this time: task restarts wait 1s, fingerprints run every 1s
	// with a 2s probe timeout, a shell loop's sleep lasts 0.5s.
	chaosQuiet = 5 * time.Second
	// chaosStable is how long the checks must keep passing: a restored
	// agent that goes wrong a moment after its first good answer (a
	// duplicate launch, a stop it forgot) is caught in the round that
	// caused it, not blamed on the next one.
	chaosStable = time.Second
	// chaosOpTimeout bounds one API call of the churn; a stop waits for
	// the tasks' kill timeout.
	chaosOpTimeout = 30 * time.Second
)

// chaosRestart is patient enough that the task kills of many rounds never
// exhaust it (which would park a task for the rest of the interval).
const chaosRestart = `    restart {
      attempts = 10
      interval = "1m"
      delay    = "1s"
      mode     = "delay"
    }`

// chaosSpec is one submission of a job: its unique token, which every task
// process carries in its marker, tells a process of this submission from
// one of any other.
type chaosSpec struct {
	token string
	count int
	tasks []string
	src   string
	// limited: the tasks have a 16 MB memory limit.
	limited bool
}

type stateKind int

const (
	stGone stateKind = iota
	stRunning
	stStopped
)

func (k stateKind) String() string { return [...]string{"gone", "running", "stopped"}[k] }

// jobState is one state the model allows a job to be in: gone (never run,
// or purged), running spec, or stopped (spec being the last one run).
// Versions are a range so that a model could allow a stop to count as a
// change (Nomad's does); pluginhost records a stop as a flag on the job's
// record, not as a version, so afterStop keeps the range as it is and the
// next run after a stop is the next version.
type jobState struct {
	kind     stateKind
	spec     *chaosSpec
	vlo, vhi uint64
}

func (s jobState) String() string {
	if s.kind == stGone {
		return "gone"
	}
	v := fmt.Sprintf("v%d", s.vlo)
	if s.vhi != s.vlo {
		v = fmt.Sprintf("v%d-%d", s.vlo, s.vhi)
	}
	return fmt.Sprintf("%s %s×%d %s", s.kind, s.spec.token, s.spec.count, v)
}

// afterRun is the state once spec is accepted on top of s.
func (s jobState) afterRun(spec *chaosSpec) jobState {
	if s.kind == stGone {
		return jobState{kind: stRunning, spec: spec}
	}
	return jobState{kind: stRunning, spec: spec, vlo: s.vlo + 1, vhi: s.vhi + 1}
}

func (s jobState) afterStop() jobState {
	if s.kind == stRunning {
		return jobState{kind: stStopped, spec: s.spec, vlo: s.vlo, vhi: s.vhi}
	}
	return s
}

// chaosJob is the model of one job ID.
type chaosJob struct {
	id       string
	driver   string // "" for shell jobs, else the CSI plugin's driver
	pluginID string
	// exec runs a shell job's tasks under the exec driver: a root of
	// their own, private pid and ipc namespaces, user nobody.
	exec bool
	// state is what the last check found.
	state jobState
	// allocs are the allocations the agent has shown or acknowledged
	// since the job was last purged: none may vanish.
	allocs map[string]bool
}

// chaosOp is one operation of a round and, once done, its outcome.
type chaosOp struct {
	kind string // "run", "update", "stop", "purge", "kill-task"
	job  *chaosJob
	spec *chaosSpec
	pid  int    // kill-task
	desc string // kill-task
	// err is the API call's error; accepted/sure classify it.
	err error
	// ids are the allocations an accepted run created.
	ids []string
}

// outcome reports whether the agent accepted the operation and whether
// that is known for sure: an HTTP answer is an answer (200 accepted,
// anything else refused), a refused connection means the request never
// reached the agent, any other transport error (EOF, reset) may have come
// after the agent acted.
func (op *chaosOp) outcome() (accepted, sure bool) {
	if op.err == nil {
		return true, true
	}
	var se *api.StatusError
	if errors.As(op.err, &se) || errors.Is(op.err, syscall.ECONNREFUSED) || errors.Is(op.err, syscall.ENOENT) {
		return false, true
	}
	return false, false
}

func (op *chaosOp) String() string {
	switch op.kind {
	case "kill-task":
		return "kill-task " + op.desc
	case "run", "update":
		lim := ""
		if op.spec.limited {
			lim = " (16 MB)"
		}
		return fmt.Sprintf("%s %s→%s×%d%s", op.kind, op.job.id, op.spec.token, op.spec.count, lim)
	}
	return op.kind + " " + op.job.id
}

// problem is one failed check.
type problem struct {
	check string
	job   string
	msg   string
	// cgroup is the task cgroup directory a cgroups problem is about.
	cgroup string
}

func (p problem) String() string {
	if p.job == "" {
		return "[" + p.check + "] " + p.msg
	}
	return "[" + p.check + "] job " + p.job + ": " + p.msg
}

// chaos is one TestChaos run.
type chaos struct {
	t      *testing.T
	e      *env
	rng    *rand.Rand
	seed   uint64
	prefix string // of every marker this run sets
	jobs   []*chaosJob
	seq    int
	skip   map[string]bool
	// cur is the agent the test talks to (the newest one).
	cur *agentProc
	// failures counts failed checks by name, failedRounds the rounds
	// with any.
	failures     map[string]int
	failedRounds []int
}

// TestChaos runs the real agent through random job churn (runs, updates,
// stops, purges, CSI plugins under both drivers, task kills), kills it
// with SIGKILL at a random moment of that churn, starts it again on the
// same data dir and checks that the state converges to what the accepted
// submissions asked for. See doc.go; `make chaos` is the long run.
func TestChaos(t *testing.T) {
	seed, rounds := *chaosSeed, *chaosRounds
	t.Logf("chaos: seed %d, %d rounds (replay: go test ./e2e -run '^TestChaos$' -chaos.seed=%d -chaos.rounds=%d)", seed, rounds, seed, rounds)
	c := newChaos(t, seed)
	for _, s := range strings.Split(*chaosSkip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.Contains(allChecks, s) {
				t.Fatalf("-chaos.skip: unknown check %q (want some of %v)", s, allChecks)
			}
			c.skip[s] = true
			t.Logf("chaos: NOT failing on check %q", s)
		}
	}
	defer c.summary()
	for r := 1; r <= rounds; r++ {
		c.round(r)
	}
	c.finish()
}

// finish stops every job, cleanly, through the last agent, and checks
// that the whole run left nothing behind: no task process or log shipper,
// no task cgroup under the env's parent, no mount under its data dir
// (exec tasks mount in namespaces of their own, which die with their
// processes). Groups and mounts a kill -9 left mid-launch were the
// restarted agents' to clean up.
func (c *chaos) finish() {
	t := c.t
	a := c.cur
	for _, j := range c.jobs {
		ctx, cancel := context.WithTimeout(context.Background(), chaosOpTimeout)
		err := a.client.StopJob(ctx, j.id, false)
		cancel()
		if err != nil && !errors.Is(err, api.ErrNotFound) {
			t.Errorf("final stop of job %s: %v", j.id, err)
		}
	}
	// There is no event for the end of a process that is not ours: poll.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := c.leftoverProcs(a)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left after every job stopped: %s", describe(left))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assertNoCgroups(t, c.e.cgroupParent)
	if m := c.e.volumeMounts(t); len(m) > 0 {
		t.Errorf("mounts left after every job stopped: %v", m)
	}
}

// leftoverProcs lists the processes other than the agent that carry one
// of this run's markers (task processes, whatever their root) or mention
// the env's root (log shippers, raw_exec tasks).
func (c *chaos) leftoverProcs(a *agentProc) []int {
	var out []int
	mark := []byte("E2E_MARK=" + c.prefix)
	root := []byte(c.e.root)
	for pid, p := range scanProcs() {
		if pid == a.pid() || pid == os.Getpid() {
			continue
		}
		if bytes.Contains(p.environ, mark) || bytes.Contains(p.cmdline, root) || bytes.Contains(p.environ, root) {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// newChaos starts the first agent of a chaos run.
func newChaos(t *testing.T, seed uint64) *chaos {
	// The garbage collector may remove stopped allocations (it has its own
	// test); off here, so that "no allocation vanishes" stays a strict
	// check of everything else.
	e := newEnv(t, csiConfig+"gc_max_allocs = 1000000\ngc_disk_usage_threshold = 100\ngc_inode_usage_threshold = 100\n")
	c := &chaos{t: t, e: e, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed,
		prefix: filepath.Base(e.root) + ":", skip: map[string]bool{}, failures: map[string]int{}}
	for _, id := range []string{"a", "b", "c", "x"} {
		c.jobs = append(c.jobs, &chaosJob{id: id, exec: id == "x", allocs: map[string]bool{}})
	}
	for _, drv := range []string{"go_plugin", "raw_exec"} {
		id := map[string]string{"go_plugin": "gp", "raw_exec": "rx"}[drv]
		c.jobs = append(c.jobs, &chaosJob{id: id, driver: drv, pluginID: "chaos-" + id, allocs: map[string]bool{}})
	}
	c.cur = e.start()
	// Runs before the env's cleanup: the env would print the last agent's
	// whole output, most of it the debug log of the checks' own polling.
	t.Cleanup(func() {
		a := c.cur
		a.kill()
		c.forgetAgent(a)
		if t.Failed() {
			t.Logf("last agent (pid %d) output:\n%s", a.pid(), agentLog(a, 20000))
		}
	})
	return c
}

// TestChaosChecksSeeDefects shows the chaos checks are not blind: after a
// clean run of a job, a second copy of its task, a stray marked process and
// a job the model does not expect must each fail the check made for them.
func TestChaosChecksSeeDefects(t *testing.T) {
	c := newChaos(t, 1)
	j := c.jobs[0]
	op := &chaosOp{kind: "run", job: j, spec: c.newSpec(j)}
	c.do(c.cur, op)
	if op.err != nil {
		t.Fatalf("run: %v", op.err)
	}
	cands := c.candidates([]*chaosOp{op})
	if probs, _ := c.settle(restarted{agentProc: c.cur}, cands); len(probs) > 0 {
		t.Fatalf("a plain run fails the checks: %v", probs)
	}
	spawn := func(env ...string) {
		cmd := exec.Command("/bin/sleep", "1000")
		cmd.Env = env
		cmd.Dir = c.e.root
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// NOMAD_ALLOC_DIR names the root, so the env's cleanup kills it
		// even if this test fails half-way.
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	expect := func(what, check string, cands map[string][]jobState) {
		t.Helper()
		probs, _ := c.verify(context.Background(), c.cur, cands)
		if !slices.ContainsFunc(probs, func(p problem) bool { return p.check == check }) {
			t.Fatalf("%s: no %q problem in %v", what, check, probs)
		}
	}
	dir := "NOMAD_ALLOC_DIR=" + c.e.root
	spawn("E2E_MARK="+c.marker(j.id, op.spec.token, "main"), "NOMAD_ALLOC_ID="+op.ids[0], dir)
	expect("a second copy of a task", checkPids, cands)
	spawn("E2E_MARK="+c.marker("b", "b0", "main"), dir)
	expect("a process of no allocation", checkOrphans, cands)
	cands[j.id] = []jobState{{kind: stGone}}
	expect("a job running that the model holds purged", checkSpec, cands)
	if len(taskCgroups(c.e.cgroupParent)) == 0 {
		t.Log("tasks run without cgroups here: the cgroups check is not tried")
		return
	}
	stray := filepath.Join(filepath.Dir(taskCgroups(c.e.cgroupParent)[0]), "stray.task")
	if err := os.Mkdir(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(stray) })
	expect("a task cgroup of no task", checkCgroups, cands)
}

// agentLog is the tail of an agent's output without the debug lines of API
// requests, which the checks' polling makes by the hundred.
func agentLog(a *agentProc, n int) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(a.output(), "\n") {
		if !strings.Contains(line, "pluginhost.http: request:") {
			b.WriteString(line)
		}
	}
	return tail(b.String(), n)
}

// round runs one round's churn against the current agent, kills it in the
// middle of it, starts the next agent and checks it.
func (c *chaos) round(r int) {
	a := c.cur
	ops := c.pickOps(r)
	// Most kills fall within the submissions (a few ms each) or the
	// task starts and stops they cause; some rounds let the churn finish
	// first, so that an agent with settled state is killed as well.
	var delay time.Duration
	settleFirst := false
	switch c.rng.IntN(4) {
	case 0:
		delay = time.Duration(c.rng.IntN(20)) * time.Millisecond
	case 1:
		delay = time.Duration(c.rng.IntN(200)) * time.Millisecond
	case 2:
		delay = time.Duration(c.rng.IntN(1500)) * time.Millisecond
	case 3:
		settleFirst = true
		delay = time.Duration(c.rng.IntN(1000)) * time.Millisecond
	}
	var wg sync.WaitGroup
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.do(a, op)
		}()
	}
	if settleFirst {
		wg.Wait()
	}
	time.Sleep(delay)
	a.kill()
	wg.Wait()
	c.forgetAgent(a)

	var log strings.Builder
	fmt.Fprintf(&log, "round %d: kill -9 %s after ", r, map[bool]string{true: "settled churn", false: "churn"}[settleFirst])
	fmt.Fprintf(&log, "%s:", delay)
	for _, op := range ops {
		acc, sure := op.outcome()
		res := "accepted"
		switch {
		case op.job == nil:
			res = "done"
			if op.err != nil {
				res = op.err.Error() // the task had exited meanwhile
			}
		case !sure:
			res = "interrupted: " + op.err.Error()
		case !acc:
			res = "refused: " + op.err.Error()
		}
		fmt.Fprintf(&log, "\n  %s: %s", op, res)
	}
	c.t.Log(log.String())

	cands := c.candidates(ops)
	start := time.Now()
	next := c.restart(r)
	probs, pinned := c.settle(next, cands)
	c.t.Logf("round %d: agent ready in %s, converged or gave up after %s, %d problems", r, next.readyIn, time.Since(start).Round(time.Millisecond), len(probs))
	failing := c.report(r, a, probs)
	for _, j := range c.jobs {
		if f, ok := pinned[j.id]; ok {
			j.state = f.state
			clear(j.allocs)
			for _, id := range f.allocs {
				j.allocs[id] = true
			}
		}
	}
	if len(failing) > 0 {
		c.heal(next, failing)
	}
}

// pickOps chooses at most one operation per job (the agent serializes
// submissions, but in an order the test cannot know, so two on one job
// would make the model ambiguous) and a few task kills. The first round
// runs every job, so that a short run (`make test`'s few rounds) has every
// kind of task: raw_exec and exec shells, CSI plugins.
func (c *chaos) pickOps(r int) []*chaosOp {
	var ops []*chaosOp
	for len(ops) == 0 {
		for _, j := range c.jobs {
			if r > 1 && c.rng.IntN(2) == 0 {
				continue
			}
			var kinds []string
			switch j.state.kind {
			case stGone:
				kinds = []string{"run"}
			case stRunning:
				kinds = []string{"update", "update", "update", "stop", "purge"}
			case stStopped:
				kinds = []string{"run", "run", "stop", "purge"}
			}
			op := &chaosOp{kind: kinds[c.rng.IntN(len(kinds))], job: j}
			if op.kind == "run" || op.kind == "update" {
				op.spec = c.newSpec(j)
			}
			ops = append(ops, op)
		}
	}
	tops := c.topProcs()
	for range c.rng.IntN(3) {
		if len(tops) == 0 {
			break
		}
		i := c.rng.IntN(len(tops))
		p := tops[i]
		tops = slices.Delete(tops, i, i+1)
		ops = append(ops, &chaosOp{kind: "kill-task", pid: p.pid, desc: fmt.Sprintf("%s/%s pid %d", p.job, p.task, p.pid)})
	}
	return ops
}

// newSpec renders a new submission of j, different from every earlier
// one by its token.
func (c *chaos) newSpec(j *chaosJob) *chaosSpec {
	c.seq++
	s := &chaosSpec{token: fmt.Sprintf("%s%d", j.id, c.seq), count: 1}
	var tasks []taskSpec
	group := chaosRestart
	if j.driver != "" {
		// One allocation per plugin: a second one of the same plugin
		// would be a rolling update, which the churn makes anyway.
		tk := csiTask(c.t, j.driver, "plugin", c.marker(j.id, s.token, "plugin"), j.pluginID, "30s")
		tk.env = map[string]string{"CHAOS_TOKEN": s.token}
		tasks = append(tasks, tk)
	} else {
		s.count = 1 + c.rng.IntN(3)
		group = fmt.Sprintf("    count = %d\n%s", s.count, chaosRestart)
		task, trap := shTask, ""
		if j.exec {
			// As pid 1 of its pid namespace the shell gets no signal it
			// has no handler for: the trap makes sure the kill signal
			// (SIGINT) ends it rather than the SIGKILL after
			// kill_timeout.
			task, trap = execTask, `trap 'exit 0' INT TERM; `
		}
		// Half the submissions get a small memory limit, and their side
		// task a child the OOM killer ends at once (the task lives on):
		// the limit is enforced, and a group with an OOM kill in it
		// goes away like any other.
		limited := c.rng.IntN(2) == 0
		s.limited = limited
		oom := ""
		if limited {
			oom = "dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null; "
		}
		// A shell loop forks a child twice a second, as real tasks do;
		// the top-process rule must not count those children.
		tasks = append(tasks, task("main", c.marker(j.id, s.token, "main"),
			fmt.Sprintf(`%secho "spec %s"; while :; do sleep 0.5; done`, trap, s.token)))
		if c.rng.IntN(2) == 0 {
			side := fmt.Sprintf(`%secho "spec %s"; exec sleep 1000000`, oom, s.token)
			if j.exec {
				side = fmt.Sprintf(`%s%secho "spec %s"; sleep 1000000 & wait`, trap, oom, s.token)
			}
			tasks = append(tasks, task("side", c.marker(j.id, s.token, "side"), side))
		}
		if limited {
			for i := range tasks {
				tasks[i].extra = "      resources {\n        memory = 16\n      }\n"
			}
		}
	}
	for _, tk := range tasks {
		s.tasks = append(s.tasks, tk.name)
	}
	s.src = jobHCL(j.id, group, tasks...)
	return s
}

// marker is the E2E_MARK value of one task of one submission.
func (c *chaos) marker(job, token, task string) string {
	return c.prefix + job + ":" + token + ":" + task
}

// do performs one operation against a; it never touches the test's T, as
// it runs beside others.
func (c *chaos) do(a *agentProc, op *chaosOp) {
	ctx, cancel := context.WithTimeout(context.Background(), chaosOpTimeout)
	defer cancel()
	switch op.kind {
	case "run", "update":
		resp, err := a.client.RegisterJobSource(ctx, op.job.id+".hcl", []byte(op.spec.src))
		op.err = err
		if err == nil {
			op.ids = resp.AllocIDs
		}
	case "stop", "purge":
		op.err = a.client.StopJob(ctx, op.job.id, op.kind == "purge")
	case "kill-task":
		// The task runs in its own session: the group takes a shell
		// loop's sleeping child along, which would otherwise linger as an
		// orphan for up to half a second.
		if pgid, err := syscall.Getpgid(op.pid); err == nil && pgid == op.pid {
			op.err = syscall.Kill(-op.pid, syscall.SIGKILL)
		} else {
			op.err = syscall.Kill(op.pid, syscall.SIGKILL)
		}
	}
}

// candidates turns the round's outcomes into the states each job may be in:
// its state before for a refused operation, after for an accepted one, and
// both for an interrupted one (a purge may also have got as far as the
// stop).
func (c *chaos) candidates(ops []*chaosOp) map[string][]jobState {
	out := map[string][]jobState{}
	for _, j := range c.jobs {
		out[j.id] = []jobState{j.state}
	}
	for _, op := range ops {
		if op.job == nil {
			continue
		}
		j := op.job
		var after []jobState
		switch op.kind {
		case "run", "update":
			after = []jobState{j.state.afterRun(op.spec)}
		case "stop":
			after = []jobState{j.state.afterStop()}
		case "purge":
			after = []jobState{{kind: stGone}}
		}
		acc, sure := op.outcome()
		switch {
		case acc:
			out[j.id] = after
			if op.kind == "purge" {
				clear(j.allocs)
			}
			for _, id := range op.ids {
				j.allocs[id] = true
			}
		case !sure:
			if op.kind == "purge" && j.state.kind == stRunning {
				after = append(after, j.state.afterStop())
			}
			out[j.id] = append(out[j.id], after...)
		}
	}
	return out
}

// restarted is an agent started after a kill.
type restarted struct {
	*agentProc
	readyIn time.Duration
}

// restart starts the next agent on the same data dir. An agent that does
// not come up ends the test: there is nothing left to check.
func (c *chaos) restart(r int) restarted {
	c.t.Helper()
	start := time.Now()
	a, started := c.e.launch()
	c.cur = a
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	fail := func(format string, args ...any) {
		c.failures[checkStart]++
		c.failedRounds = append(c.failedRounds, r)
		// The cleanup prints the agent's output.
		c.t.Fatalf("chaos seed %d round %d: [%s] %s", c.seed, r, checkStart, fmt.Sprintf(format, args...))
	}
	select {
	case <-started:
	case <-a.exited:
		fail("agent exited during start-up: %v", a.exitErr)
	case <-ctx.Done():
		fail("agent did not start within %s", startTimeout)
	}
	if err := a.waitReady(ctx); err != nil {
		fail("agent not ready: %v", err)
	}
	return restarted{agentProc: a, readyIn: time.Since(start).Round(time.Millisecond)}
}

// forgetAgent drops a dead agent from the env, so that a long run's failure
// does not print the output of a hundred agents; report prints what
// matters when it matters.
func (c *chaos) forgetAgent(a *agentProc) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	c.e.agents = slices.DeleteFunc(c.e.agents, func(x *agentProc) bool { return x == a })
}

// settle re-checks the agent after every event (and every recheck) until
// every check passes, or until the checks have failed with no event for
// chaosQuiet (the state converged, wrongly), or until chaosSettle. It
// returns the last problems and, per job, the state it found.
func (c *chaos) settle(a restarted, cands map[string][]jobState) ([]problem, map[string]found) {
	ctx, cancel := context.WithTimeout(context.Background(), chaosSettle)
	defer cancel()
	evs := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		// Owned by this call: cancel ends it.
		defer close(done)
		follow(ctx, a.agentProc, evs)
	}()
	defer func() {
		cancel()
		<-done
	}()
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	lastEvent := time.Now()
	var passing time.Time // since when every check has passed
	for {
		probs, pinned := c.verify(ctx, a.agentProc, cands)
		switch {
		case len(c.failing(probs)) > 0:
			passing = time.Time{}
			if time.Since(lastEvent) >= chaosQuiet {
				return probs, pinned
			}
		case passing.IsZero():
			passing = time.Now()
		case time.Since(passing) >= chaosStable:
			return probs, pinned
		}
		if ctx.Err() != nil {
			return probs, pinned
		}
		select {
		case <-evs:
			lastEvent = time.Now()
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// follow signals evs on every event of any topic until ctx ends, and
// subscribes again if the agent drops the subscription (it does so to
// subscribers that fall behind); a new subscription counts as an event,
// since events may have been missed.
func follow(ctx context.Context, a *agentProc, evs chan<- struct{}) {
	signal := func() {
		select {
		case evs <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		es, err := a.client.Events(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(recheck):
			}
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = es.Close() })
		signal()
		for {
			if _, err := es.Next(ctx); err != nil {
				break
			}
			signal()
		}
		stop()
		_ = es.Close()
	}
}

// taskProc is one top process of a task this run started.
type taskProc struct {
	pid              int
	job, token, task string
	alloc            string
}

func (p taskProc) String() string {
	return fmt.Sprintf("pid %d %s/%s alloc %s", p.pid, p.token, p.task, short(p.alloc))
}

// topProcs finds every live top process carrying one of this run's
// markers: the process whose parent does not carry the same marker.
func (c *chaos) topProcs() []taskProc {
	all := scanProcs()
	mark := func(p proc) (string, bool) {
		for _, kv := range bytes.Split(p.environ, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("E2E_MARK=")); ok {
				return string(v), true
			}
		}
		return "", false
	}
	var out []taskProc
	for pid, p := range all {
		m, ok := mark(p)
		if !ok || !strings.HasPrefix(m, c.prefix) {
			continue
		}
		if parent, ok := all[p.ppid]; ok {
			if pm, ok := mark(parent); ok && pm == m {
				continue
			}
		}
		f := strings.SplitN(strings.TrimPrefix(m, c.prefix), ":", 3)
		if len(f) != 3 {
			continue
		}
		tp := taskProc{pid: pid, job: f[0], token: f[1], task: f[2]}
		for _, kv := range bytes.Split(p.environ, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("NOMAD_ALLOC_ID=")); ok {
				tp.alloc = string(v)
			}
		}
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// jobView is what the agent and /proc show of one job.
type jobView struct {
	job    *api.Job // nil: unknown to the agent
	allocs []*api.AllocListStub
	// wanted are the allocations with desired status run, in full.
	wanted []*api.Allocation
	plugin *api.CSIPlugin // nil: no such plugin
}

// verify runs every check once. It also returns the state each job was
// found in (one of its candidates; the nearest one if none matched, so
// that one defect is reported once and not again in every later round).
func (c *chaos) verify(ctx context.Context, a *agentProc, cands map[string][]jobState) ([]problem, map[string]found) {
	var probs []problem
	add := func(check, job, format string, args ...any) {
		probs = append(probs, problem{check: check, job: job, msg: fmt.Sprintf(format, args...)})
	}
	views := map[string]*jobView{}
	for _, j := range c.jobs {
		v, err := c.view(ctx, a, j)
		if err != nil {
			// An agent that stops answering has not started.
			add(checkStart, j.id, "%v", err)
			return probs, nil
		}
		views[j.id] = v
	}
	procs := c.topProcs()
	byTask := map[string][]taskProc{} // alloc/task
	for _, p := range procs {
		byTask[p.alloc+"/"+p.task] = append(byTask[p.alloc+"/"+p.task], p)
	}

	// Checks 2 and 3: the processes against the allocations.
	accounted := map[int]bool{}
	for _, j := range c.jobs {
		for _, al := range views[j.id].wanted {
			for _, task := range al.Tasks {
				ts := al.TaskStates[task]
				if ts == nil || ts.State != api.TaskStateRunning {
					continue
				}
				got := byTask[al.ID+"/"+task]
				want := lastPid(al, task)
				for _, p := range got {
					if p.pid == want {
						accounted[p.pid] = true
					}
				}
				if len(got) != 1 || got[0].pid != want {
					add(checkPids, j.id, "allocation %s task %s: recorded pid %d, running top processes [%s]",
						short(al.ID), task, want, joinProcs(got))
				}
			}
		}
	}
	for _, p := range procs {
		if !accounted[p.pid] && !c.isExtraCopy(p, views) {
			add(checkOrphans, p.job, "process %s belongs to no running task of a wanted allocation", p)
		}
	}
	probs = append(probs, c.checkCgroups(views)...)

	// Checks 4, 5 and 6, job by job.
	pinned := map[string]found{}
	for _, j := range c.jobs {
		v := views[j.id]
		st, ps := c.checkJob(j, v, cands[j.id], byTask)
		probs = append(probs, ps...)
		f := found{state: st}
		for _, s := range v.allocs {
			f.allocs = append(f.allocs, s.ID)
		}
		pinned[j.id] = f
	}
	return probs, pinned
}

// checkCgroups is check 7: every running task's process is in the task's
// own cgroup, and every task cgroup under the env's parent is a running
// task's. A kill -9 in the middle of a launch or a stop leaves a group no
// record owns, which the next agent must remove (and kill what is in it).
func (c *chaos) checkCgroups(views map[string]*jobView) []problem {
	var probs []problem
	running := map[string]bool{} // <alloc>.<task>
	for _, j := range c.jobs {
		for _, al := range views[j.id].wanted {
			for _, task := range al.Tasks {
				if ts := al.TaskStates[task]; ts == nil || ts.State != api.TaskStateRunning {
					continue
				}
				name := al.ID + "." + task
				running[name] = true
				want := c.e.cgroupParent + "/" + name
				pid := lastPid(al, task)
				if got, ok := memoryCgroup(pid); ok && got != want {
					probs = append(probs, problem{check: checkCgroups, job: j.id,
						msg: fmt.Sprintf("allocation %s task %s: pid %d is in cgroup %s, want %s", short(al.ID), task, pid, got, want)})
				}
			}
		}
	}
	for _, dir := range taskCgroups(c.e.cgroupParent) {
		if !running[filepath.Base(dir)] {
			probs = append(probs, problem{check: checkCgroups, cgroup: dir,
				msg: fmt.Sprintf("task cgroup %s belongs to no running task", dir)})
		}
	}
	return probs
}

// memoryCgroup is the cgroup of pid in the memory hierarchy (v1) or the
// unified one (v2); ok is false if the process is gone.
func memoryCgroup(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || pid <= 0 {
		return "", false
	}
	unified := ""
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if slices.Contains(strings.Split(f[1], ","), "memory") {
			return f[2], true
		}
		if f[1] == "" {
			unified = f[2]
		}
	}
	return unified, unified != ""
}

// found is the state a check found a job in, with its allocations.
type found struct {
	state  jobState
	allocs []string
}

// isExtraCopy reports whether p is a second copy of a running task, which
// the pids check reports already.
func (c *chaos) isExtraCopy(p taskProc, views map[string]*jobView) bool {
	v := views[p.job]
	if v == nil {
		return false
	}
	for _, al := range v.wanted {
		if al.ID == p.alloc {
			ts := al.TaskStates[p.task]
			return ts != nil && ts.State == api.TaskStateRunning
		}
	}
	return false
}

func joinProcs(ps []taskProc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}

// view asks the agent about one job.
func (c *chaos) view(ctx context.Context, a *agentProc, j *chaosJob) (*jobView, error) {
	v := &jobView{}
	job, err := a.client.Job(ctx, j.id)
	switch {
	case errors.Is(err, api.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		v.job = job
	}
	allocs, err := a.client.JobAllocations(ctx, j.id)
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return nil, err
	}
	v.allocs = allocs
	for _, s := range allocs {
		if s.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		al, err := a.client.Allocation(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		v.wanted = append(v.wanted, al)
	}
	if j.pluginID != "" {
		p, err := a.client.Plugin(ctx, j.pluginID)
		switch {
		case errors.Is(err, api.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			v.plugin = p
		}
	}
	return v, nil
}

// checkJob matches what the agent shows of j against the states the model
// allows and returns the state found with the checks that failed.
func (c *chaos) checkJob(j *chaosJob, v *jobView, cands []jobState, byTask map[string][]taskProc) (jobState, []problem) {
	var probs []problem
	add := func(check, format string, args ...any) {
		probs = append(probs, problem{check: check, job: j.id, msg: fmt.Sprintf(format, args...)})
	}
	// The tokens the wanted allocations' processes run.
	tokens := map[string]bool{}
	for _, al := range v.wanted {
		for _, task := range al.Tasks {
			for _, p := range byTask[al.ID+"/"+task] {
				tokens[p.token] = true
			}
		}
	}
	want := make([]string, len(cands))
	for i, s := range cands {
		want[i] = s.String()
	}
	expected := strings.Join(want, " or ")

	// Pick the candidate the agent's state is (or is nearest to): the
	// running spec whose processes run, else by what is known.
	var st jobState
	found := false
	for _, s := range slices.Backward(cands) {
		if s.kind == stRunning && tokens[s.spec.token] {
			st, found = s, true
			break
		}
	}
	for _, s := range slices.Backward(cands) {
		if found {
			break
		}
		switch {
		case len(v.wanted) > 0 && s.kind == stRunning,
			len(v.wanted) == 0 && v.job != nil && s.kind == stStopped,
			len(v.wanted) == 0 && v.job == nil && s.kind == stGone:
			st, found = s, true
		}
	}
	if !found {
		st = cands[len(cands)-1]
	}

	// Check 4: no lost job or allocation.
	if st.kind != stGone {
		if v.job == nil {
			add(checkLost, "the agent does not know the job; want %s", expected)
			return jobState{kind: stGone}, probs
		}
		listed := map[string]bool{}
		for _, s := range v.allocs {
			listed[s.ID] = true
		}
		var lost []string
		for id := range j.allocs {
			if !listed[id] {
				lost = append(lost, short(id))
			}
		}
		if len(lost) > 0 {
			sort.Strings(lost)
			check := checkLost
			if st.kind == stStopped && slices.ContainsFunc(cands, func(s jobState) bool { return s.kind == stGone }) {
				// An interrupted purge that got as far as forgetting
				// some allocations: no job runs, and purging it again
				// finishes the work. Reported, not failed.
				check = checkNote
			}
			add(check, "allocations %v vanished (listed: %d)", lost, len(v.allocs))
		}
	}

	// Check 5: the state, spec and count.
	switch st.kind {
	case stGone:
		if v.job != nil || len(v.allocs) > 0 {
			add(checkSpec, "job known with %d allocations (%d wanted) after a purge; want %s", len(v.allocs), len(v.wanted), expected)
		}
	case stStopped:
		if len(v.wanted) > 0 || v.job == nil {
			add(checkSpec, "%s; want %s", describeView(v, tokens), expected)
		}
	case stRunning:
		ok := len(tokens) == 1 && tokens[st.spec.token] && len(v.wanted) == st.spec.count
		for _, al := range v.wanted {
			for _, task := range st.spec.tasks {
				if ts := al.TaskStates[task]; ts == nil || ts.State != api.TaskStateRunning {
					ok = false
				}
			}
			for _, task := range al.Tasks {
				if !slices.Contains(st.spec.tasks, task) {
					ok = false
				}
			}
		}
		if v.job != nil && (len(v.job.TaskGroups) != 1 || v.job.TaskGroups[0].Count != st.spec.count) {
			ok = false
		}
		if !ok {
			add(checkSpec, "%s; want %s", describeView(v, tokens), expected)
		}
	}

	// Check 5, versions: a job's version counts its accepted changes, and
	// its wanted allocations run that version.
	if v.job != nil && st.kind != stGone {
		if v.job.Version < st.vlo || v.job.Version > st.vhi {
			add(checkVersion, "job Version %d, want %s (%s)", v.job.Version, versionRange(st), st)
		}
		for _, al := range v.wanted {
			if al.JobVersion != v.job.Version {
				add(checkVersion, "wanted allocation %s has JobVersion %d, the job Version %d", short(al.ID), al.JobVersion, v.job.Version)
			}
		}
		st.vlo, st.vhi = v.job.Version, v.job.Version
	}

	// Check 6: plugins.
	if j.pluginID != "" {
		p := v.plugin
		switch {
		case st.kind == stRunning:
			wanted := map[string]bool{}
			for _, al := range v.wanted {
				wanted[al.ID] = true
			}
			if p == nil || p.NodesHealthy < 1 || p.ControllersHealthy < 1 || !wanted[p.ActiveNode] || !wanted[p.ActiveController] {
				add(checkPlugins, "plugin %s not healthy and active in a wanted allocation: %s", j.pluginID, describePlugin(p))
			}
		case p != nil && (len(p.Nodes)+len(p.Controllers) > 0 || p.ActiveNode != "" || p.ActiveController != ""):
			add(checkPlugins, "plugin %s still registered for a %s job: %s", j.pluginID, st.kind, describePlugin(p))
		}
	}

	if v.job == nil {
		st = jobState{kind: stGone}
	}
	return st, probs
}

func versionRange(s jobState) string {
	if s.vlo == s.vhi {
		return fmt.Sprint(s.vlo)
	}
	return fmt.Sprintf("%d or %d", s.vlo, s.vhi)
}

// describeView renders a job's allocations and the specs their processes
// run, for failure messages.
func describeView(v *jobView, tokens map[string]bool) string {
	var b strings.Builder
	if v.job == nil {
		b.WriteString("job unknown")
	} else {
		fmt.Fprintf(&b, "job %s v%d", v.job.Status, v.job.Version)
		if len(v.job.TaskGroups) > 0 {
			fmt.Fprintf(&b, " count %d", v.job.TaskGroups[0].Count)
		}
	}
	fmt.Fprintf(&b, ", running specs %v, allocations:", keys(tokens))
	for _, s := range v.allocs {
		fmt.Fprintf(&b, " %s(%s/%s v%d", short(s.ID), s.DesiredStatus, s.ClientStatus, s.JobVersion)
		for _, task := range keys(s.TaskStates) {
			fmt.Fprintf(&b, " %s=%s", task, s.TaskStates[task].State)
		}
		b.WriteString(")")
	}
	return b.String()
}

func describePlugin(p *api.CSIPlugin) string {
	if p == nil {
		return "not registered"
	}
	return fmt.Sprintf("nodes %d/%d controllers %d/%d active %s/%s allocations %v", p.NodesHealthy, p.NodesExpected,
		p.ControllersHealthy, p.ControllersExpected, short(p.ActiveNode), short(p.ActiveController), pluginAllocs(p))
}

// failing drops the problems of skipped checks.
func (c *chaos) failing(probs []problem) []problem {
	return slices.DeleteFunc(slices.Clone(probs), func(p problem) bool { return c.skip[p.check] || p.check == checkNote })
}

// report fails the test on a round's problems (those of skipped checks are
// only logged), counts them, and returns them.
func (c *chaos) report(r int, killed *agentProc, probs []problem) []problem {
	c.t.Helper()
	for _, p := range probs {
		switch {
		case p.check == checkNote:
			c.t.Logf("round %d: %s", r, p)
		case c.skip[p.check]:
			c.t.Logf("round %d: (skipped) %s", r, p)
		}
	}
	failing := c.failing(probs)
	if len(failing) == 0 {
		return nil
	}
	lines := make([]string, len(failing))
	seen := map[string]bool{}
	for i, p := range failing {
		lines[i] = p.String()
		if !seen[p.check] {
			seen[p.check] = true
			c.failures[p.check]++
		}
	}
	c.failedRounds = append(c.failedRounds, r)
	msg := fmt.Sprintf("chaos seed %d round %d: %d problems:\n  %s\ntask processes: [%s]",
		c.seed, r, len(failing), strings.Join(lines, "\n  "), joinProcs(c.topProcs()))
	if *chaosKeepGoing {
		c.t.Errorf("%s", msg)
		return failing
	}
	c.t.Fatalf("%s\nkilled agent (pid %d) output:\n%s", msg, killed.pid(), agentLog(killed, 10000))
	return nil
}

// heal purges every job a problem names and kills what is left of its
// processes, so that the next round starts from a known state and one
// defect is counted once.
func (c *chaos) heal(a restarted, probs []problem) {
	names := map[string]bool{}
	for _, p := range probs {
		names[p.job] = true
	}
	for _, j := range c.jobs {
		if !names[j.id] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), chaosOpTimeout)
		err := a.client.StopJob(ctx, j.id, true)
		cancel()
		if err != nil && !errors.Is(err, api.ErrNotFound) {
			c.t.Logf("heal: purge %s: %v", j.id, err)
		}
		killMatching(c.prefix + j.id + ":")
		j.state = jobState{kind: stGone}
		clear(j.allocs)
	}
	// A process the agent lost track of may name no job the model has.
	if names[""] {
		killMatching(c.prefix)
	}
	// A task cgroup no task owns: what is in it is killed, and it goes.
	for _, p := range probs {
		if p.cgroup != "" {
			removeCgroupDir(c.t, p.cgroup)
		}
	}
}

func (c *chaos) summary() {
	if len(c.failedRounds) == 0 {
		c.t.Logf("chaos seed %d: every check passed in every round", c.seed)
		return
	}
	var b strings.Builder
	for _, k := range allChecks {
		if n := c.failures[k]; n > 0 {
			fmt.Fprintf(&b, " %s:%d", k, n)
		}
	}
	c.t.Logf("chaos seed %d: %d failed rounds %v; rounds failing each check:%s", c.seed, len(c.failedRounds), c.failedRounds, b.String())
}
