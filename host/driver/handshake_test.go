package driver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// victim is another plugin's endpoint: a listener of the test process that
// reports every connection it accepts and, once the connection closes,
// what it carried.
type victim struct {
	l        net.Listener
	accepted chan struct{}
	closed   chan []byte
}

func listenVictim(t *testing.T, network, addr string) *victim {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	v := &victim{l: l, accepted: make(chan struct{}, 64), closed: make(chan []byte, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			v.accepted <- struct{}{}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				v.closed <- b
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	return v
}

// markerBytes is what the test's own connection to a victim carries.
const markerBytes = "marker"

// heard returns how many connections reached v before this call and how
// many bytes they carried, without sleeping: the test connects itself and
// sends markerBytes; connections are accepted in the order they were made,
// so once the marker's connection has been read to its end every earlier
// one has been accepted, and (the launch that made them being over) each
// of them closes and reports too.
func (v *victim) heard(t *testing.T) (conns int, bytes int) {
	t.Helper()
	c, err := net.Dial(v.l.Addr().Network(), v.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, markerBytes); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	timeout := time.After(10 * time.Second)
	others := 0
	for marked := false; !marked; {
		select {
		case b := <-v.closed:
			if string(b) == markerBytes {
				marked = true
			} else {
				others++
				bytes += len(b)
			}
		case <-timeout:
			t.Fatal("the test's own connection to the victim was never read")
		}
	}
	for done := false; !done; {
		select {
		case <-v.accepted:
			conns++
		default:
			done = true
		}
	}
	conns-- // the marker
	for ; others < conns; others++ {
		select {
		case b := <-v.closed:
			bytes += len(b)
		case <-timeout:
			t.Fatal("a connection to the victim never closed")
		}
	}
	return conns, bytes
}

// announce launches a plugin whose handshake line names network and addr
// (a shell script: go-plugin takes whatever the line says) and returns the
// launch's error.
func announce(t *testing.T, sockDir, network, addr string) error {
	t.Helper()
	script := filepath.Join(t.TempDir(), "liar")
	src := fmt.Sprintf("#!/bin/sh\necho '1|1|%s|%s|grpc'\nexec sleep 60\n", network, addr)
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin"}
	if network == "tcp-v6only" {
		// Listens on [::]:port, IPv6 only, and announces 127.0.0.1:port.
		_, port, _ := net.SplitHostPort(addr)
		script, env = testPlugin, append(env, "TESTPLUGIN_V6ONLY="+port)
	}
	_, errW := pipeFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	task, err := newGoPlugin(t, newWatcher(t)).Start(ctx, &StartRequest{
		Command: script, Env: env, SocketDir: sockDir, Stdout: errW, Stderr: errW,
		Plugin: &PluginSpec{MagicCookieKey: "LIAR", MagicCookieValue: "yes", ProtocolVersions: []int{1}, Dispense: "kv"},
	})
	if err == nil {
		killOnCleanup(t, task.Handle().Pid)
		t.Cleanup(task.Detach)
	}
	return err
}

// A plugin that announces a socket or port that is not its own is not
// registered, and the endpoint it named never hears from the agent: no
// Shutdown, no health check, not a byte. On main the agent registered it
// healthy on the other plugin's socket.
func TestHandshakeNamesOnlyOwnSocket(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the network and address to announce, the
		// victim, and the words the refusal must hold.
		setup func(t *testing.T, sockDir string) (network, addr string, v *victim, want string)
		// probed: the check had to connect to learn who listens (a
		// socket in the task's own directory); it sends nothing.
		probed bool
	}{
		{name: "another plugin's socket", setup: func(t *testing.T, _ string) (string, string, *victim, string) {
			p := filepath.Join(t.TempDir(), "other.sock")
			return "unix", p, listenVictim(t, "unix", p), "outside its own socket directory"
		}},
		{name: "a link to it in its own directory", setup: func(t *testing.T, sockDir string) (string, string, *victim, string) {
			p := filepath.Join(t.TempDir(), "other.sock")
			v := listenVictim(t, "unix", p)
			link := filepath.Join(sockDir, "plugin.sock")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return "unix", link, v, "is a symbolic link"
		}},
		{name: "a hard link to it in its own directory", setup: func(t *testing.T, sockDir string) (string, string, *victim, string) {
			p := filepath.Join(t.TempDir(), "other.sock")
			v := listenVictim(t, "unix", p)
			link := filepath.Join(sockDir, "plugin.sock")
			if err := os.Link(p, link); err != nil {
				t.Fatal(err)
			}
			return "unix", link, v, "hard links"
		}},
		{name: "a socket in its directory another process serves", probed: true, setup: func(t *testing.T, sockDir string) (string, string, *victim, string) {
			p := filepath.Join(sockDir, "plugin.sock")
			return "unix", p, listenVictim(t, "unix", p), "which is not a process of the task"
		}},
		{name: "another process's TCP port", setup: func(t *testing.T, _ string) (string, string, *victim, string) {
			v := listenVictim(t, "tcp", "127.0.0.1:0")
			return "tcp", v.l.Addr().String(), v, "which no process of the task"
		}},
		{name: "a v6-only wildcard on another process's port", setup: func(t *testing.T, sockDir string) (string, string, *victim, string) {
			v := listenVictim(t, "tcp", "127.0.0.1:0")
			// announce runs the test plugin in its liar mode for this.
			return "tcp-v6only", v.l.Addr().String(), v, "1 of the 2 listening sockets that could take a connection are not the task's"
		}},
		{name: "a TCP address off this machine", setup: func(t *testing.T, _ string) (string, string, *victim, string) {
			return "tcp", netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), 80).String(), nil, "not a loopback address"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sockDir := filepath.Join(t.TempDir(), "s")
			if err := os.Mkdir(sockDir, 0o700); err != nil {
				t.Fatal(err)
			}
			network, addr, v, want := c.setup(t, sockDir)
			err := announce(t, sockDir, network, addr)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("launch: %v, want a refusal saying %q", err, want)
			}
			if v == nil {
				return
			}
			n, b := v.heard(t)
			if (!c.probed && n != 0) || n > 1 {
				t.Fatalf("the victim got %d connections", n)
			}
			if b != 0 {
				t.Fatalf("the victim got %d bytes", b)
			}
		})
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:04D2":                         "127.0.0.1:1234",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"00000000:1F90":                         "0.0.0.0:8080",
	} {
		got, ok := parseProcAddr(in)
		if !ok || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
}
