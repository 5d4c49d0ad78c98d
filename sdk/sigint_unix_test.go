//go:build unix

package sdk_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// A plugin under a host, in its host's session (sdktest launches it as
// go-plugin does, without setsid), ignores SIGINT: a Ctrl-C in the host's
// terminal reaches it too. That is also every hosted plugin's lot on
// Windows, which has no sessions (serve_other.go).
func TestHostedPluginInHostsSessionIgnoresSIGINT(t *testing.T) {
	p := sdktest.Start(t, bins.TestPlugin)
	if sid, _ := unix.Getsid(p.Pid); sid == p.Pid {
		t.Fatalf("plugin %d leads its own session; the test needs it in ours", p.Pid)
	}
	proc, err := os.FindProcess(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Time for the signal to take a plugin that heeded it down.
	time.Sleep(300 * time.Millisecond)
	if _, err := p.Identity.Probe(ctxT(t), &csi.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after SIGINT: %v", err)
	}
	if err := proc.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("plugin gone after SIGINT: %v", err)
	}
}
