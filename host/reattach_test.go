package host

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	kvshared "github.com/hashicorp/go-plugin/examples/grpc/shared"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// The go-plugin reattach helper against a real agent in this process and
// real plugin processes: go-plugin's own KV examples (gRPC and net/rpc),
// launched by a plain go-plugin client as their example host program does,
// and registered in the agent's registry directly, as the supervisor does
// (with the reattach record its registration carries), so that a switch of
// the active instance can be repeated quickly and timed.

const kvType = "kv"

// kvInstance is one launched KV plugin: the go-plugin client that launched
// it (the baseline) and its registration.
type kvInstance struct {
	name     string
	launched *plugin.Client
	kv       kvshared.KV
	info     *dynamic.PluginInfo
}

// launchKV launches bin (plugin-go-grpc or plugin-go-netrpc) with a go-plugin
// client of its own, in a directory of its own (the plugin keeps its values
// in kv_KEY files there), and records "who" = name in it.
func (e *resolverEnv) launchKV(tb testing.TB, bin, name string) *kvInstance {
	tb.Helper()
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(testbin.MustPath(tb, bin))
	cmd.Dir = dir
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: kvshared.Handshake, Plugins: kvshared.PluginMap, Cmd: cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC, plugin.ProtocolNetRPC},
		Logger:           hclog.NewNullLogger(),
	})
	tb.Cleanup(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		tb.Fatalf("launch %s: %v", bin, err)
	}
	raw, err := rpc.Dispense(kvDispense(bin))
	if err != nil {
		tb.Fatal(err)
	}
	kv := raw.(kvshared.KV)
	if err := kv.Put("who", []byte(name)); err != nil {
		tb.Fatal(err)
	}
	rc := c.ReattachConfig()
	return &kvInstance{name: name, launched: c, kv: kv, info: &dynamic.PluginInfo{
		Type: kvType, Name: "main", AllocID: name,
		ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: rc.Addr.String()},
		Options: map[string]string{
			supervisor.OptionGoPluginProtocol:        string(rc.Protocol),
			supervisor.OptionGoPluginProtocolVersion: strconv.Itoa(c.NegotiatedVersion()),
			supervisor.OptionGoPluginPid:             strconv.Itoa(rc.Pid),
		},
	}}
}

func kvDispense(bin string) string {
	if bin == "plugin-go-netrpc" {
		return kvshared.PluginNetRPC
	}
	return kvshared.PluginGRPC
}

func (e *resolverEnv) registerKV(tb testing.TB, in *kvInstance) {
	tb.Helper()
	if err := e.a.Registry().Register(in.info.Copy()); err != nil {
		tb.Fatal(err)
	}
}

func (e *resolverEnv) deregisterKV(tb testing.TB, in *kvInstance) {
	tb.Helper()
	if err := e.a.Registry().Deregister(kvType, "main", in.name); err != nil {
		tb.Fatal(err)
	}
}

var kvBase = &plugin.ClientConfig{HandshakeConfig: kvshared.Handshake, Plugins: kvshared.PluginMap, Logger: hclog.NewNullLogger()}

// who asks the follower's current instance which it is.
func who(ctx context.Context, f *api.ReattachFollower, dispense string) (string, error) {
	raw, err := f.Dispense(ctx, dispense)
	if err != nil {
		return "", err
	}
	b, err := raw.(kvshared.KV).Get("who")
	// The example plugin appends "\n\nWritten from ..." to what it stores.
	n, _, _ := strings.Cut(string(b), "\n")
	return n, err
}

func waitWho(tb testing.TB, f *api.ReattachFollower, dispense, want string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got string
	var err error
	for ctx.Err() == nil {
		if got, err = who(ctx, f, dispense); err == nil && got == want {
			return
		}
	}
	tb.Fatalf("never served by %s; last answer %q, %v", want, got, err)
}

var kvBins = []string{"plugin-go-grpc", "plugin-go-netrpc"}

// The follower hands out a client of the active instance and moves to the
// next one when the registry changes; the record the agent serves is the
// launch's own reattach config.
func TestReattachFollowerFollowsActiveInstance(t *testing.T) {
	for _, bin := range kvBins {
		t.Run(bin, func(t *testing.T) {
			e := startResolverEnv(t)
			e.a.follower.Follow(kvType)
			a, b := e.launchKV(t, bin, "a"), e.launchKV(t, bin, "b")
			f := api.FollowReattach(e.client, kvType, "main", kvBase)
			defer f.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			// Nothing registered yet: Dispense waits for an instance.
			got := make(chan string, 1)
			go func() { n, _ := who(ctx, f, kvDispense(bin)); got <- n }()
			e.registerKV(t, a)
			if n := <-got; n != "a" {
				t.Fatalf("waiting Dispense served by %q, want a", n)
			}
			rec, _ := f.Current()
			if want := a.launched.ReattachConfig(); rec.Pid != want.Pid || rec.Addr != want.Addr.String() || rec.Protocol != string(want.Protocol) {
				t.Fatalf("record %+v, want the launch's %+v", rec, want)
			}
			e.registerKV(t, b)
			waitWho(t, f, kvDispense(bin), "b")
			e.deregisterKV(t, b)
			waitWho(t, f, kvDispense(bin), "a")
			e.deregisterKV(t, a)
			if r, _ := f.Current(); r != nil {
				// The event may not have arrived yet; wait for it.
				_, changed := f.Current()
				select {
				case <-changed:
				case <-ctx.Done():
				}
			}
			if r, _ := f.Current(); r != nil {
				t.Fatalf("record %+v after the last instance left", r)
			}
			if _, err := api.ReattachConfig(ctx, e.client, kvType, "main"); err == nil {
				t.Fatal("reattach config with no active instance")
			}
		})
	}
}

// BenchmarkReattachCall: a KV Get through a client from the follower
// (Reattach and Dispense) and through the go-plugin client that launched
// the same plugin itself, in interleaved blocks. Goal: ≤ 1.05×; x-launched
// reports the ratio.
func BenchmarkReattachCall(b *testing.B) {
	for _, bin := range kvBins {
		b.Run(bin, func(b *testing.B) {
			e := startResolverEnv(b)
			e.a.follower.Follow(kvType)
			in := e.launchKV(b, bin, "a")
			e.registerKV(b, in)
			f := api.FollowReattach(e.client, kvType, "main", kvBase)
			b.Cleanup(f.Close)
			waitWho(b, f, kvDispense(bin), "a")
			ctx := context.Background()
			raw, err := f.Dispense(ctx, kvDispense(bin))
			if err != nil {
				b.Fatal(err)
			}
			viaReattach := raw.(kvshared.KV)
			const block = 64
			var tRe, tLa time.Duration
			timed := func(kv kvshared.KV, n int) time.Duration {
				t0 := time.Now()
				for range n {
					if _, err := kv.Get("who"); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(t0)
			}
			b.ResetTimer()
			for done, i := 0, 0; done < b.N; done, i = done+block, i+1 {
				n := min(block, b.N-done)
				if i%2 == 0 {
					tRe += timed(viaReattach, n)
					tLa += timed(in.kv, n)
				} else {
					tLa += timed(in.kv, n)
					tRe += timed(viaReattach, n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(tRe.Nanoseconds())/float64(b.N), "reattach-ns/call")
			b.ReportMetric(float64(tLa.Nanoseconds())/float64(b.N), "launched-ns/call")
			b.ReportMetric(float64(tRe)/float64(tLa), "x-launched")
		})
	}
}

// BenchmarkReattachFailover: the time from the active instance changing to
// the consumer's first successful call through the follower answered by
// the instance that is active next, both ways. p50-ms/p99-ms: the active
// instance leaves the registry (as when its allocation stops or crashes)
// and the standby takes over; calls have nowhere else to go meanwhile.
// join-p50-ms/join-p99-ms: an instance registers and becomes active (a
// rolling update); the previous one serves until the switch. Each covers
// the registry's commit, the event, the follower's switch (join: a new
// go-plugin client, reattached, and Dispense) and the call. Goal: p99 <
// 10 ms.
func BenchmarkReattachFailover(b *testing.B) {
	for _, bin := range kvBins {
		b.Run(bin, func(b *testing.B) {
			e := startResolverEnv(b)
			e.a.follower.Follow(kvType)
			ins := map[string]*kvInstance{"a": e.launchKV(b, bin, "a"), "b": e.launchKV(b, bin, "b")}
			e.registerKV(b, ins["a"])
			e.registerKV(b, ins["b"])
			f := api.FollowReattach(e.client, kvType, "main", kvBase)
			b.Cleanup(f.Close)
			d := kvDispense(bin)
			waitWho(b, f, d, "b")
			ctx := context.Background()
			active, standby := "b", "a"
			leave := make([]time.Duration, 0, b.N)
			join := make([]time.Duration, 0, b.N)
			var calls atomic.Int64
			// until calls through the follower until want answers, and
			// returns how long that took from t0.
			until := func(t0 time.Time, want string) time.Duration {
				for {
					n, err := who(ctx, f, d)
					calls.Add(1)
					if err != nil {
						b.Fatal(err)
					}
					if n == want {
						return time.Since(t0)
					}
				}
			}
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				e.deregisterKV(b, ins[active])
				leave = append(leave, until(t0, standby))
				// The one that left comes back as the newest, hence
				// active again.
				t0 = time.Now()
				e.registerKV(b, ins[active])
				join = append(join, until(t0, active))
			}
			b.StopTimer()
			pct := func(samples []time.Duration, p float64) float64 {
				slices.Sort(samples)
				return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(leave, 0.50), "p50-ms")
			b.ReportMetric(pct(leave, 0.99), "p99-ms")
			b.ReportMetric(pct(join, 0.50), "join-p50-ms")
			b.ReportMetric(pct(join, 0.99), "join-p99-ms")
			b.ReportMetric(float64(calls.Load())/float64(2*b.N), "calls/switch")
		})
	}
}

// The follower keeps a client of the standby connected: it is dialled
// ahead of any failover; a standby that was never active is let go when
// another replaces it (its gRPC connection closed; go-plugin's net/rpc
// client cannot close without stopping the plugin, so that one stays
// open); the instance that was active stays on as the standby when a new
// one takes over; a failover to the standby opens no connection; and Close
// lets go of a standby that was never active.
func TestReattachFollowerKeepsStandbyConnected(t *testing.T) {
	for _, bin := range kvBins {
		t.Run(bin, func(t *testing.T) {
			e := startResolverEnv(t)
			e.a.follower.Follow(kvType)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ins := map[string]*kvInstance{}
			px := map[string]*connCounter{}
			for _, n := range []string{"a", "b", "c"} {
				ins[n] = e.launchKV(t, bin, n)
				// Consumers reach each instance through a proxy that counts
				// their connections.
				px[n] = countConns(t, ins[n].info.ConnectionInfo.SocketPath, filepath.Join(e.dir, n+"-proxy.sock"))
				ins[n].info.ConnectionInfo.SocketPath = px[n].addr
			}
			d := kvDispense(bin)
			e.registerKV(t, ins["a"])
			e.registerKV(t, ins["b"])
			rec, err := e.client.PluginReattach(ctx, kvType, "main")
			if err != nil {
				t.Fatal(err)
			}
			if sb := rec.Standby; rec.AllocID != "b" || sb == nil || sb.AllocID != "a" || sb.Addr != px["a"].addr || sb.Pid != ins["a"].launched.ReattachConfig().Pid {
				t.Fatalf("reattach record %+v, standby %+v: want b's, with a's as the standby", rec, rec.Standby)
			}
			f := api.FollowReattach(e.client, kvType, "main", kvBase)
			defer f.Close()
			waitWho(t, f, d, "b")
			px["a"].waitOpened(ctx, t, 1) // the standby, never active

			e.registerKV(t, ins["c"]) // c active, b standby, a let go
			waitWho(t, f, d, "c")
			if bin == "plugin-go-grpc" {
				px["a"].waitClosed(ctx, t, 1)
			}
			e.deregisterKV(t, ins["c"])
			waitWho(t, f, d, "b")
			e.registerKV(t, ins["c"])
			waitWho(t, f, d, "c")
			e.deregisterKV(t, ins["c"])
			waitWho(t, f, d, "b")
			if n := px["b"].opened(); n != 1 {
				t.Fatalf("b, active, then standby twice and active again, was dialled %d times, want once", n)
			}
			if n := px["b"].closed(); n != 0 {
				t.Fatalf("%d connections to b closed", n)
			}
			if n := px["c"].opened(); n != 2 {
				t.Fatalf("c, registered twice, was dialled %d times, want 2", n)
			}
			// a, never active, was dialled as the standby whenever b was
			// active (three times) and let go whenever c was (twice);
			// Close lets it go a third time.
			px["a"].waitOpened(ctx, t, 3)
			f.Close()
			if bin == "plugin-go-grpc" {
				px["a"].waitClosed(ctx, t, 3)
			}
		})
	}
}

// connCounter is a unix socket proxy to a plugin that counts the
// connections opened through it and those closed.
type connCounter struct {
	addr    string
	mu      sync.Mutex
	open    int
	shut    int
	changed chan struct{}
}

// countConns serves a proxy to target at addr until the test ends.
func countConns(t *testing.T, target, addr string) *connCounter {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{addr: addr, changed: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, cn := range conns {
			_ = cn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", target)
			if err != nil {
				_ = down.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, down, up)
			mu.Unlock()
			c.note(func() { c.open++ })
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(up, down)
				_ = up.Close()
				c.note(func() { c.shut++ })
			}()
			go func() {
				defer wg.Done()
				_, _ = io.Copy(down, up)
				_ = down.Close()
			}()
		}
	}()
	return c
}

func (c *connCounter) note(change func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	change()
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *connCounter) opened() int { c.mu.Lock(); defer c.mu.Unlock(); return c.open }
func (c *connCounter) closed() int { c.mu.Lock(); defer c.mu.Unlock(); return c.shut }

func (c *connCounter) waitOpened(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	c.wait(ctx, t, "opened", n, c.opened)
}

func (c *connCounter) waitClosed(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	c.wait(ctx, t, "closed", n, c.closed)
}

func (c *connCounter) wait(ctx context.Context, t *testing.T, what string, n int, count func() int) {
	t.Helper()
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if got := count(); got >= n {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s: %d connections %s, want %d", c.addr, count(), what, n)
		}
	}
}
