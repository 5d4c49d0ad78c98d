package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// answerBound is how long a request may take while the API is flooded:
// unflooded it takes milliseconds, and a CLI command its start-up on top.
const answerBound = 5 * time.Second

// flood is the test's side of many connections to the agent: each one has
// a reader that reports when the agent closes it.
type flood struct {
	t    *testing.T
	addr string
	// closed receives one value per connection the agent closed.
	closed chan struct{}
	// streaming receives one value per event stream that got its status.
	streaming chan struct{}
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

func newFlood(t *testing.T, addr string) *flood {
	f := &flood{t: t, addr: addr, closed: make(chan struct{}, 1<<16), streaming: make(chan struct{}, 1<<16)}
	// The readers end when their connections are closed.
	t.Cleanup(func() {
		f.mu.Lock()
		for _, c := range f.conns {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

// open dials and sends first (nothing, half a header, a whole request),
// then reads whatever comes back until the agent closes the connection.
func (f *flood) open(first string) {
	f.t.Helper()
	c, err := net.DialTimeout("tcp", f.addr, answerBound)
	if err != nil {
		f.t.Fatalf("flood connection %d: %v", len(f.conns), err)
	}
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	if first != "" {
		if _, err := io.WriteString(c, first); err != nil {
			f.t.Fatal(err)
		}
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		br := bufio.NewReader(c)
		if line, err := br.ReadString('\n'); err == nil && strings.HasPrefix(first, "GET /v1/event/stream") &&
			strings.HasPrefix(line, "HTTP/1.1 200") {
			f.streaming <- struct{}{}
		}
		_, _ = io.Copy(io.Discard, br)
		f.closed <- struct{}{}
	}()
}

// waitN waits up to d for n values on ch.
func waitN(t *testing.T, ch <-chan struct{}, n int, d time.Duration, what string) {
	t.Helper()
	deadline := time.After(d)
	for i := range n {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: %d of %d after %s", what, i, n, d)
		}
	}
}

// openFDs counts pid's open descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// softNofile is pid's soft RLIMIT_NOFILE.
func softNofile(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if f := strings.Fields(rest); ok && len(f) == 3 {
			if f[0] == "unlimited" {
				return ^uint64(0)
			}
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				t.Fatalf("limits of %d: %q: %v", pid, line, err)
			}
			return n
		}
	}
	t.Fatalf("limits of %d have no open files line:\n%s", pid, b)
	return 0
}

// TestAPIAnswersUnderConnectionFlood is issue 26's section 6 against the
// real agent on loopback TCP. First, more connections than the listener's
// cap, of every kind a local user without a token can hold (silent ones,
// half headers) and idle keep-alive ones with the token: the oldest are
// closed for room, the agent's descriptors stay within the cap, and a new
// TCP client, the CLI over TCP and the CLI over the local unix socket are
// answered within answerBound; tokenless requests lose their connection
// at once. Then every TCP slot held by an event stream (which the cap
// never closes): a new TCP client is turned away at once rather than
// queued, and the unix socket still answers.
func TestAPIAnswersUnderConnectionFlood(t *testing.T) {
	e := newEnv(t, "")
	a := startTCP(t, e)
	pid := a.pid()
	local := "unix://" + filepath.Join(e.dataDir, "api.sock")
	if st, err := os.Stat(filepath.Join(e.dataDir, "api.sock")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("local socket: %v, %v; want mode 0600", st, err)
	}
	tcpCap := apiserver.MaxConnsFor(softNofile(t, pid))
	secret, err := os.ReadFile(filepath.Join(a.home, ".config", "pluginhost", "tokens", a.addr))
	if err != nil {
		t.Fatal(err)
	}
	before := openFDs(t, pid)

	answered := func(what string, call func(context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), answerBound)
		defer cancel()
		start := time.Now()
		if err := call(ctx); err != nil {
			t.Fatalf("%s under the flood: %v (after %s)", what, err, time.Since(start))
		}
		t.Logf("%s answered in %s", what, time.Since(start).Round(time.Millisecond))
	}
	freshTCP := func(ctx context.Context) error {
		c, err := api.NewClient(a.addr, api.WithToken(string(secret)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Self(ctx)
		return err
	}
	cli := func(addr string) func(context.Context) error {
		return func(context.Context) error {
			res := cliAs(t, e.bin, a.home, addr, "job", "status")
			if res.code != 0 {
				return fmt.Errorf("exit %d: %s%s", res.code, res.stdout, res.stderr)
			}
			return nil
		}
	}

	f := newFlood(t, a.addr)
	const refused = 50
	for range refused {
		f.open("GET /v1/agent/self HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	}
	waitN(t, f.closed, refused, answerBound, "tokenless requests whose connection was closed")
	third := tcpCap/3 + 100
	for range third {
		f.open("")
	}
	for range third {
		f.open("GET /v1/agent/self HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow")
	}
	for range third {
		f.open("GET /v1/agent/self HTTP/1.1\r\nHost: 127.0.0.1\r\n" + api.HeaderToken + ": " + string(secret) + "\r\n\r\n")
	}
	// The agent closed what did not fit, sooner than its header timeout
	// (apiserver.DefaultReadHeaderTimeout, 10s) would have.
	waitN(t, f.closed, 3*third-tcpCap, answerBound, "connections closed at the cap")
	if n := openFDs(t, pid); n > before+tcpCap {
		t.Errorf("%d descriptors open with %d flood connections, %d before: more than the cap of %d", n, 3*third, before, tcpCap)
	}
	answered("a new TCP client with the token", freshTCP)
	answered("the CLI over TCP", cli(a.addr))
	answered("the CLI over the local socket", cli(local))

	// The streams are newer than every connection left from above, so
	// those are closed for them first: once every stream has its status,
	// the streams hold every slot, and none is waiting to be closed.
	for range tcpCap {
		f.open("GET /v1/event/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n" + api.HeaderToken + ": " + string(secret) + "\r\n\r\n")
	}
	waitN(t, f.streaming, tcpCap, 30*time.Second, "event streams")
	if n := openFDs(t, pid); n > before+tcpCap {
		t.Errorf("%d descriptors open with %d streams, %d before: more than the cap of %d", n, tcpCap, before, tcpCap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	if err := freshTCP(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("a new TCP client with every slot streaming: %v, want a prompt refusal", err)
	}
	answered("the CLI over the local socket with every TCP slot streaming", cli(local))
}

// nofileOf parses the soft and hard limits out of a "Max open files" line
// of /proc/<pid>/limits, as a task printed it.
func nofileOf(t *testing.T, out string) (soft, hard string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) == 3 {
				return f[0], f[1]
			}
		}
	}
	t.Fatalf("no open files limit in %q", out)
	return "", ""
}

// TestAgentRaisesNofileTasksKeepTheirs: an agent started with a low soft
// RLIMIT_NOFILE runs with it raised (Go's runtime does it at start, to the
// hard limit less one), and its tasks, raw_exec and exec (through the
// mount helper, itself a Go program), get the limit the agent was given,
// not the raised one: Go restores it in every child, unless the process
// calls setrlimit(RLIMIT_NOFILE) itself, which the agent must not.
func TestAgentRaisesNofileTasksKeepTheirs(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	const low = 1024
	e.softNofile = low
	a := e.start()
	if soft := softNofile(t, a.pid()); soft <= low {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", a.pid()))
		t.Fatalf("the agent runs with a soft limit of %d, started with %d:\n%s", soft, low, b)
	}
	// A file, not the log: the log shipper may not have written the
	// line yet when the task is dead.
	script := `grep 'open files' /proc/self/limits > "$NOMAD_TASK_DIR/nofile"`
	// A job each: the first task to exit would fail its siblings.
	for _, tk := range []taskSpec{shTask("raw", e.markerFor("raw"), script), execTask("ex", e.markerFor("ex"), script)} {
		task := tk.name
		alloc := a.runJob(task, jobHCL(task, noRestart, tk))[0]
		al := a.waitAlloc(alloc, task+" dead", taskDead(task))
		b, err := os.ReadFile(filepath.Join(e.taskDir(alloc, task), "local", "nofile"))
		if err != nil {
			t.Fatalf("task %s: %v\n%s", task, err, eventSummary(al, task))
		}
		if soft, _ := nofileOf(t, string(b)); soft != strconv.Itoa(low) {
			t.Errorf("task %s runs with a soft limit of %s, want the agent's own %d:\n%s", task, soft, low, b)
		}
	}
}
