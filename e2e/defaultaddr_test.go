package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// TestDefaultAddress: an agent whose config has no addr listens where the
// CLI looks without PLUGINHOST_ADDR; a second agent of the same user is
// refused with a message that says to set addr, and a stale socket left by
// a kill -9 is no obstacle. XDG_RUNTIME_DIR points at the test's own
// directory, as a login session's does, so parallel tests never meet.
func TestDefaultAddress(t *testing.T) {
	e := newEnv(t, "")
	rt := filepath.Join(e.root, "rt")
	home := filepath.Join(e.root, "home")
	for _, d := range []string{rt, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.extraEnv = []string{"XDG_RUNTIME_DIR=" + rt, "HOME=" + home}
	e.sock = filepath.Join(rt, "pluginhost", api.DefaultSocketName)
	writeCfg := func(path, dataDir string) {
		cfg := fmt.Sprintf("data_dir = %q\nlog_level = \"debug\"\nnode_name = \"e2e\"\ncgroup_parent = %q\n", dataDir, e.cgroupParent)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(e.cfgPath, e.dataDir)
	a := e.start()
	if out := a.output(); !strings.Contains(out, "API: unix://"+e.sock+" (the default address") {
		t.Errorf("agent does not say it is on the default address:\n%s", out)
	}
	for path, want := range map[string]fs.FileMode{filepath.Dir(e.sock): fs.ModeDir | 0o700, e.sock: fs.ModeSocket | 0o600} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", path, fi, err, want)
		}
	}

	// The CLI of a new user: no PLUGINHOST_ADDR, no flag.
	cli := func(args ...string) (string, string, error) {
		cmd := exec.Command(e.bin, args...)
		cmd.Env = append(userEnv(home), "XDG_RUNTIME_DIR="+rt)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	if out, errOut, err := cli("job", "status"); err != nil || !strings.Contains(out, "No jobs") {
		t.Fatalf("job status without PLUGINHOST_ADDR: %v\n%s%s", err, out, errOut)
	}

	// A second agent, on a data dir of its own, would take the same
	// default address: it exits at once, saying what to set, and leaves
	// its data dir untouched.
	second := filepath.Join(e.root, "second.hcl")
	secondData := filepath.Join(e.root, "d2")
	writeCfg(second, secondData)
	first := e.cfgPath
	e.cfgPath = second
	b, _ := e.launch()
	e.cfgPath = first
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	select {
	case <-b.exited:
	case <-ctx.Done():
		t.Fatalf("second agent still running:\n%s", b.output())
	}
	if out := b.output(); b.exitErr == nil || !strings.Contains(out, "another agent already listens on the default address unix://"+e.sock) ||
		!strings.Contains(out, "set addr in its config") {
		t.Errorf("second agent: %v, want a refusal that says to set addr:\n%s", b.exitErr, out)
	}
	if _, err := os.Stat(filepath.Join(secondData, "state.db")); err == nil {
		t.Error("the refused agent opened its data dir")
	}
	// agent -dev has no config to set addr in: it is told so.
	dev := exec.CommandContext(ctx, e.bin, "agent", "-dev")
	dev.Env = append(userEnv(home), "XDG_RUNTIME_DIR="+rt)
	if out, err := dev.CombinedOutput(); err == nil || !strings.Contains(string(out), "A dev agent always takes the default address") {
		t.Errorf("second agent -dev: %v\n%s", err, out)
	}
	if _, err := a.client.Self(ctx); err != nil {
		t.Errorf("the first agent's API after the refusals: %v", err)
	}

	// kill -9 leaves the socket file behind; the next agent replaces it.
	a.kill()
	if _, err := os.Lstat(e.sock); err != nil {
		t.Fatalf("no stale socket after kill -9: %v", err)
	}
	e.start()
	if out, errOut, err := cli("job", "status"); err != nil || !strings.Contains(out, "No jobs") {
		t.Fatalf("job status after a restart over the stale socket: %v\n%s%s", err, out, errOut)
	}
}
