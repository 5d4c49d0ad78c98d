package supervisor

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// A healthy plugin is registered under its allocation once Probe says
// ready: as csi-node for type node, reachable on the socket it serves.
func TestRegistersHealthyPlugin(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{})
		var args []string
		if drv == jobspec.DriverRawExec {
			// Interpolated after the prestart hooks: the real drivers
			// that ignore the environment are configured like this.
			args = []string{"--endpoint=${CSI_ENDPOINT}"}
		}
		ar := a.Run(pluginJob("csi", drv, jobspec.CSIPluginTypeNode, nil, args...))
		a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		h := handle(t, ar, "plugin")

		p := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		notRegistered(t, a.reg, dynamic.PluginTypeCSIController, ar.ID())
		want := h.SocketPath // go_plugin: the go-plugin server's socket
		if drv == jobspec.DriverRawExec {
			want = filepath.Join(taskrunner.TaskSocketDir(ar.SocketDir(), 0), SocketName)
			endpoint := "unix://" + want
			if got := procEnviron(t, h.Pid)["CSI_ENDPOINT"]; got != endpoint {
				t.Errorf("task CSI_ENDPOINT = %q, want %q", got, endpoint)
			}
			if args := procCmdline(t, h.Pid); len(args) < 2 || args[1] != "--endpoint="+endpoint {
				t.Errorf("task args = %q, want --endpoint=%s", args, endpoint)
			}
		} else if _, set := procEnviron(t, h.Pid)["CSI_ENDPOINT"]; set {
			t.Errorf("go_plugin task got CSI_ENDPOINT; the go-plugin socket is its endpoint")
		}
		if !strings.HasPrefix(want, taskrunner.TaskSocketDir(ar.SocketDir(), 0)+"/") {
			t.Errorf("socket %s is not under the task's own socket dir", want)
		}
		if p.ConnectionInfo.SocketPath != want {
			t.Errorf("registered socket %q, want %q", p.ConnectionInfo.SocketPath, want)
		}
		if p.Version == "" || p.Version != p.Options["ProviderVersion"] || p.Options["Provider"] != "mockcsi.pluginhost.dev" {
			t.Errorf("version %q, options %v", p.Version, p.Options)
		}
		mount := filepath.Join(a.DataDir, "csi", "node", "hostpath")
		if p.Options["MountDir"] != mount || p.Options["StagePublishBaseDir"] != mount {
			t.Errorf("options %v, want mount dir %s", p.Options, mount)
		}
		if fi, err := os.Stat(mount); err != nil || !fi.IsDir() {
			t.Errorf("mount dir: %v", err)
		}

		a.Stop(ar)
		notRegistered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		if drv == jobspec.DriverRawExec {
			if _, err := os.Lstat(want); !os.IsNotExist(err) {
				t.Errorf("socket %s left after stop: %v", want, err)
			}
		}
	})
}

// A task that names its own CSI_ENDPOINT keeps it, and is probed there.
func TestTaskChosenEndpoint(t *testing.T) {
	a := newAgent(t, "", agentOpts{})
	sock := filepath.Join(a.DataDir, "own.sock")
	ar := a.Run(pluginJob("csi", jobspec.DriverRawExec, jobspec.CSIPluginTypeController,
		map[string]string{"CSI_ENDPOINT": "unix://" + sock}))
	a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
	h := handle(t, ar, "plugin")
	if got := procEnviron(t, h.Pid)["CSI_ENDPOINT"]; got != "unix://"+sock {
		t.Errorf("CSI_ENDPOINT = %q, want the task's own", got)
	}
	if p := registered(t, a.reg, dynamic.PluginTypeCSIController, ar.ID()); p.ConnectionInfo.SocketPath != sock {
		t.Errorf("registered socket %q, want %q", p.ConnectionInfo.SocketPath, sock)
	}
	// The runner does not rebuild a re-adopted task's environment; the
	// supervisor finds the endpoint in the process's own.
	b := a.restart(nil)
	b.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
	if p := registered(t, b.reg, dynamic.PluginTypeCSIController, ar.ID()); p.ConnectionInfo.SocketPath != sock {
		t.Errorf("after restart: registered socket %q, want %q", p.ConnectionInfo.SocketPath, sock)
	}
	if n := len(b.Events.Matching(ar.ID(), taskrunner.EventStarted)); n != 0 {
		t.Errorf("plugin relaunched:%s", b.Events)
	}
}

// An endpoint that is not a unix socket cannot be supervised: the task
// fails at once with an event that says why, instead of timing out.
func TestBadEndpointFailsTask(t *testing.T) {
	a := newAgent(t, "", agentOpts{})
	ar := a.Run(pluginJob("csi", jobspec.DriverRawExec, jobspec.CSIPluginTypeNode,
		map[string]string{"CSI_ENDPOINT": "unix:///" + strings.Repeat("x", 120) + "/csi.sock"}))
	<-ar.Done()
	evs := a.Events.Matching(ar.ID(), taskrunner.EventSetupFailure)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "CSI_ENDPOINT") || !strings.Contains(evs[0].Message, "107") {
		t.Fatalf("setup failure events %v; all:%s", evs, a.Events)
	}
	if n := len(a.Events.Matching(ar.ID(), taskrunner.EventStarted)); n != 0 {
		t.Fatalf("task started %d times", n)
	}
}

// A monolith is one process registered twice: node and controller.
func TestMonolithRegistersBothTypes(t *testing.T) {
	eachDriver(t, func(t *testing.T, drv string) {
		a := newAgent(t, "", agentOpts{})
		ar := a.Run(pluginJob("csi", drv, jobspec.CSIPluginTypeMonolith, nil))
		ev := a.Events.Wait(t, ar.ID(), EventPluginHealthy, 1)
		handle(t, ar, "plugin")
		node := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		ctrl := registered(t, a.reg, dynamic.PluginTypeCSIController, ar.ID())
		if node.ConnectionInfo.SocketPath != ctrl.ConnectionInfo.SocketPath {
			t.Errorf("node on %s, controller on %s", node.ConnectionInfo.SocketPath, ctrl.ConnectionInfo.SocketPath)
		}
		if !strings.Contains(ev.Message, "csi-node") || !strings.Contains(ev.Message, "csi-controller") {
			t.Errorf("healthy event %q does not name both types", ev.Message)
		}
		if want := filepath.Join(a.DataDir, "csi", "monolith", "hostpath"); node.Options["MountDir"] != want {
			t.Errorf("mount dir %q, want %q", node.Options["MountDir"], want)
		}
		a.Stop(ar)
		notRegistered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
		notRegistered(t, a.reg, dynamic.PluginTypeCSIController, ar.ID())
	})
}

func procEnviron(t testing.TB, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env
}

func procCmdline(t testing.TB, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// loans records what the supervisor lends: socket → connection on loan.
type loans struct {
	mu  sync.Mutex
	out map[string]grpc.ClientConnInterface
}

func (l *loans) Lend(socket string, conn grpc.ClientConnInterface) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out[socket] = conn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.out, socket)
	}
}

func (l *loans) onLoan() map[string]grpc.ClientConnInterface {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.out)
}

// A go_plugin task's go-plugin connection is lent (to the CSI manager, in
// the agent) before the plugin is registered, and withdrawn when the task
// stops; a raw_exec task has no connection to lend.
func TestGoPluginConnectionLent(t *testing.T) {
	for _, drv := range drivers {
		t.Run(drv, func(t *testing.T) {
			l := &loans{out: map[string]grpc.ClientConnInterface{}}
			a, ar := healthyPlugin(t, drv, jobspec.CSIPluginTypeNode, agentOpts{conns: l})
			p := registered(t, a.reg, dynamic.PluginTypeCSINode, ar.ID())
			got := l.onLoan()
			if drv == jobspec.DriverRawExec {
				if len(got) != 0 {
					t.Fatalf("raw_exec task lent %v", got)
				}
				return
			}
			conn, ok := got[p.ConnectionInfo.SocketPath]
			if !ok || len(got) != 1 {
				t.Fatalf("on loan %v, want the registered socket %s", got, p.ConnectionInfo.SocketPath)
			}
			h, _ := conn.(*grpc.ClientConn)
			if h == nil || h.GetState() == connectivity.Shutdown {
				t.Fatalf("lent connection %T is not an open go-plugin connection", conn)
			}
			a.Stop(ar)
			if got := l.onLoan(); len(got) != 0 {
				t.Fatalf("still on loan after the task stopped: %v", got)
			}
		})
	}
}
