package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pluginhost/pluginhost/internal/testbin"
)

func startSpec(t *testing.T, d *GoPlugin, command string, spec *PluginSpec, extraEnv ...string) (PluginTask, error) {
	t.Helper()
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "s")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := d.Start(ctx, &StartRequest{
		Command: command, Env: append([]string{"PATH=/usr/bin:/bin"}, extraEnv...), WorkDir: dir,
		SocketDir: sockDir, Stdout: out, Stderr: out, Plugin: spec,
	})
	if err != nil {
		return nil, err
	}
	killOnCleanup(t, task.Handle().Pid)
	t.Cleanup(task.Detach)
	return task.(PluginTask), nil
}

var exampleSpec = &PluginSpec{MagicCookieKey: "BASIC_PLUGIN", MagicCookieValue: "hello", ProtocolVersions: []int{1}, Dispense: "kv"}

// go-plugin's own gRPC example launches with the job's handshake, is
// identified by its health service and re-attached with the same spec.
func TestGoPluginGenericLaunchAndReattach(t *testing.T) {
	w := newWatcher(t)
	d := newGoPlugin(t, w)
	task, err := startSpec(t, d, testbin.MustPath(t, "plugin-go-grpc"), exampleSpec)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := task.Identity().(*HealthIdentity)
	if !ok || id.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("identity %#v, want a SERVING *HealthIdentity", task.Identity())
	}
	h := task.Handle()
	if h.Plugin != exampleSpec || h.SocketPath == "" {
		t.Fatalf("handle %+v", h)
	}
	task.Detach()

	d2 := newGoPlugin(t, w)
	re, err := d2.Recover(context.Background(), h, nil)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	t.Cleanup(re.Detach)
	if _, ok := re.(PluginTask).Identity().(*HealthIdentity); !ok {
		t.Fatalf("re-attached identity %#v", re.(PluginTask).Identity())
	}

	// The wrong cookie: go-plugin's example refuses to run as a plugin.
	bad := *exampleSpec
	bad.MagicCookieValue = "nope"
	if _, err := startSpec(t, d, testbin.MustPath(t, "plugin-go-grpc"), &bad); err == nil {
		t.Fatal("launched with the wrong cookie")
	}
}

// go-plugin's net/rpc example is hosted: the handshake accepts net/rpc,
// the identity is Control.Ping over the multiplexed connection, and it is
// re-attached by its recorded protocol.
func TestGoPluginNetRPCLaunchAndReattach(t *testing.T) {
	w := newWatcher(t)
	d := newGoPlugin(t, w)
	task, err := startSpec(t, d, testbin.MustPath(t, "plugin-go-netrpc"), exampleSpec)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := task.Identity().(*HealthIdentity); !ok || id.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("identity %#v, want a SERVING *HealthIdentity", task.Identity())
	}
	if _, ok := task.Dispensed().(plugin.ClientProtocol); !ok {
		t.Fatalf("dispensed %T, want the go-plugin net/rpc client", task.Dispensed())
	}
	h := task.Handle()
	if h.Reattach == nil || h.Reattach.Protocol != string(plugin.ProtocolNetRPC) {
		t.Fatalf("reattach record %+v, want protocol netrpc", h.Reattach)
	}
	task.Detach()

	d2 := newGoPlugin(t, w)
	re, err := d2.Recover(context.Background(), h, nil)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	t.Cleanup(re.Detach)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Ping(ctx, re.(PluginTask).Dispensed().(plugin.ClientProtocol)); err != nil {
		t.Fatalf("Control.Ping after re-attach: %v", err)
	}
}

// Plugins not built with the sdk ignore SIGINT (go-plugin's Serve does),
// so Nomad's default kill_signal alone would wait the whole kill_timeout
// and end in SIGKILL. Kill asks go-plugin's controller first: both of
// go-plugin's KV examples, launched and re-attached, exit on their own in
// well under a second with kill_signal SIGINT and kill_timeout 5s.
func TestGoPluginGracefulStop(t *testing.T) {
	w := newWatcher(t)
	d := newGoPlugin(t, w)
	for _, bin := range []string{"plugin-go-grpc", "plugin-go-netrpc"} {
		for _, reattached := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-%v", strings.TrimPrefix(bin, "plugin-go-"), reattached), func(t *testing.T) {
				task, err := startSpec(t, d, testbin.MustPath(t, bin), exampleSpec)
				if err != nil {
					t.Fatal(err)
				}
				var victim Task = task
				if reattached {
					h := task.Handle()
					task.Detach()
					re, err := newGoPlugin(t, w).Recover(context.Background(), h, nil)
					if err != nil {
						t.Fatalf("recover: %v", err)
					}
					t.Cleanup(re.Detach)
					victim = re
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				if err := victim.Kill(ctx, syscall.SIGINT, 5*time.Second); err != nil {
					t.Fatalf("kill: %v", err)
				}
				took := time.Since(start)
				res := victim.Result()
				t.Logf("stopped in %s: %+v", took, res)
				if took > time.Second {
					t.Errorf("stop took %s, want well under a second", took)
				}
				if !reattached && res.Signal == int(syscall.SIGKILL) {
					t.Errorf("plugin was SIGKILLed: %+v", res)
				}
			})
		}
	}
}

func TestGoPluginRefusesTLS(t *testing.T) {
	w := newWatcher(t)
	d := newGoPlugin(t, w)
	_, err := startSpec(t, d, tlsPlugin, &PluginSpec{MagicCookieKey: "TLS_PLUGIN", MagicCookieValue: "yes", ProtocolVersions: []int{1}, Dispense: "tls"})
	t.Logf("TLS plugin refused: %v", err)
	if !errors.Is(err, ErrNotPlainGRPC) || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("TLS plugin: err = %v", err)
	}
	// A go-plugin server whose environment has PLUGIN_CLIENT_CERT turns
	// AutoMTLS on and sends a certificate in its handshake line, on which
	// go-plugin v1.8's client panics: the test process would die of it.
	_, err = startSpec(t, d, testbin.MustPath(t, "plugin-go-grpc"), exampleSpec, "PLUGIN_CLIENT_CERT=any")
	t.Logf("AutoMTLS plugin refused: %v", err)
	if !errors.Is(err, ErrNotPlainGRPC) || !strings.Contains(err.Error(), "TLS certificate") {
		t.Fatalf("AutoMTLS plugin: err = %v", err)
	}
}

// TestGoPluginNonCSIWithoutPluginBlock: an sdk plugin of another type whose
// job has no plugin block shakes hands (the sdk's handshake) but serves no
// CSI. The launch error says what to add instead of only go-plugin's
// "unknown service csi.v1.Identity".
func TestGoPluginNonCSIWithoutPluginBlock(t *testing.T) {
	d := newGoPlugin(t, newWatcher(t))
	_, err := startSpec(t, d, testbin.MustPath(t, "kv"), nil)
	if err == nil {
		t.Fatal("a non-CSI plugin launched as CSI")
	}
	for _, want := range []string{"unknown service csi.v1.Identity", "without a plugin block must be an sdk CSI plugin", "plugin {", `type = "kv"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("launch error lacks %q:\n%v", want, err)
		}
	}
}
