package logmon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

var shipper string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "logmonbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shipper = filepath.Join(dir, "logmon")
	if b, err := exec.Command("go", "build", "-o", shipper, "./internal/logmonbin").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build logmon: %v\n%s", err, b)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func files(t *testing.T, dir, prefix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestRotatorCapsSizeAndCount(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRotator(openLogs(t, dir), "web.stdout", 3, 100, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("a", 39) + "\n"
	for range 20 { // 800 bytes → 8 files of 100, only the last 3 kept
		if _, err := r.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got := files(t, dir, "web.stdout.")
	want := []string{"web.stdout.5", "web.stdout.6", "web.stdout.7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for _, f := range got {
		fi, _ := os.Stat(filepath.Join(dir, f))
		if fi.Size() > 100 {
			t.Fatalf("%s is %d bytes, over the 100-byte cap", f, fi.Size())
		}
	}
	// A restarted shipper continues the series instead of overwriting .0.
	r2, err := NewRotator(openLogs(t, dir), "web.stdout", 3, 100, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.idx != 7 {
		t.Fatalf("reopened at index %d, want 7", r2.idx)
	}
}

func TestRotatorRejectsBadLimits(t *testing.T) {
	if _, err := NewRotator(openLogs(t, t.TempDir()), "x", 0, 10, 0o640); err == nil {
		t.Fatal("max files 0 accepted")
	}
}

// TestShipperProcess runs the real shipper process: it must
// write both streams and exit by itself once the writers are closed.
func TestShipperProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{Command: []string{shipper}, Dir: openLogs(t, dir), Task: "web", MaxFiles: 2, MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.CloseWriters()
		if proc, err := os.FindProcess(p.Pid); err == nil {
			_ = proc.Kill()
		}
	})
	line := strings.Repeat("o", 99) + "\n"
	for range 50 {
		if _, err := p.Stdout.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Stderr.WriteString("oops\n"); err != nil {
		t.Fatal(err)
	}
	p.CloseWriters()
	waitExit(t, ctx, p, "shipper did not exit after its pipes closed")
	if got := files(t, dir, "web.stdout."); fmt.Sprint(got) != "[web.stdout.3 web.stdout.4]" {
		t.Fatalf("stdout files %v", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "web.stderr.0"))
	if err != nil || string(b) != "oops\n" {
		t.Fatalf("stderr file %q, %v", b, err)
	}
}

// A shipper whose newest file is a planted link refuses to start, and
// says which file: the caller fails the task rather than restarting it
// into the same refusal. The link's target is untouched.
func TestShipperRefusesPlantedNewestFile(t *testing.T) {
	for _, plant := range []string{"symlink", "dangling symlink", "hard link", "directory symlink"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			host := t.TempDir()
			target := filepath.Join(host, "passwd")
			if err := os.WriteFile(target, []byte("root:x:0:0\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			writeLog(t, dir, "web.stdout.0", "old\n")
			at := filepath.Join(dir, "web.stdout.1")
			var err error
			switch plant {
			case "symlink":
				err = os.Symlink(target, at)
			case "dangling symlink":
				err = os.Symlink(filepath.Join(host, "new"), at)
			case "hard link":
				err = os.Link(target, at)
			case "directory symlink":
				err = os.Symlink(host, at)
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = Start(ctx, Config{Command: []string{shipper}, Dir: openLogs(t, dir), Task: "web", MaxFiles: 2, MaxFileSize: 1000})
			if !errors.Is(err, beneath.ErrUnsafe) || !strings.Contains(err.Error(), at) {
				t.Fatalf("Start = %v, want a refusal naming %s", err, at)
			}
			if b, _ := os.ReadFile(target); string(b) != "root:x:0:0\n" {
				t.Fatalf("target written: %q", b)
			}
			if ents, _ := os.ReadDir(host); len(ents) != 1 {
				t.Fatalf("something was created in the host dir: %v", ents)
			}
		})
	}
}

// Links planted at every index a rotation will reach are skipped, never
// written through; the stream says so; old links are removed by name.
func TestRotatorSkipsPlantedRotationTargets(t *testing.T) {
	dir := t.TempDir()
	host := t.TempDir()
	target := filepath.Join(host, "shadow")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := openLogs(t, dir)
	r, err := NewRotator(logs, "web.stderr", 3, 1000, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("web.stderr.%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(target, filepath.Join(dir, "web.stderr.4")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Write([]byte(strings.Repeat("x", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	_ = r.Close()
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Fatalf("written through a planted link: %q", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "web.stderr.5"))
	if err != nil || !strings.Contains(string(b), "web.stderr.1 existed before the shipper made it") || !strings.Contains(string(b), "web.stderr.4") {
		t.Fatalf("the stream does not say what was skipped: %q (%v)", b, err)
	}
	for i := 1; i <= 4; i++ {
		if fi, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("web.stderr.%d", i))); err == nil {
			t.Errorf("old planted link web.stderr.%d kept (%v), want it pruned by name", i, fi.Mode())
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("pruning removed the link's target: %v", err)
	}
}

func writeLog(t *testing.T, dir, name, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o640); err != nil {
		t.Fatal(err)
	}
}

// openLogs opens dir as the agent opens a log directory; the test's
// cleanup closes it.
func openLogs(t testing.TB, dir string) *beneath.Dir {
	t.Helper()
	d, err := beneath.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestSpawnAcceptsOutputBeforeReady: a task launched right after Spawn
// writes before the shipper has its files open; nothing may be lost.
func TestSpawnAcceptsOutputBeforeReady(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := spawn(t, Config{Command: []string{shipper}, Dir: openLogs(t, dir), Task: "web", MaxFiles: 2, MaxFileSize: 1 << 20})
	if _, err := p.Stdout.WriteString("early\n"); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if err := p.Ready(ctx); err != nil {
		t.Fatalf("second Ready: %v", err)
	}
	if _, err := p.Stdout.WriteString("late\n"); err != nil {
		t.Fatal(err)
	}
	p.CloseWriters()
	waitExit(t, ctx, p, "shipper did not exit after its pipes closed")
	b, err := os.ReadFile(filepath.Join(dir, "web.stdout.0"))
	if err != nil || string(b) != "early\nlate\n" {
		t.Fatalf("stdout file %q, %v", b, err)
	}
}

// TestSpawnReportsRefusalOnReady: Spawn succeeds (the process starts);
// the shipper's complaint arrives through Ready, and the shipper is gone.
func TestSpawnReportsRefusalOnReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "web.stdout.0")); err != nil {
		t.Fatal(err)
	}
	p, err := Spawn(Config{Command: []string{shipper}, Dir: openLogs(t, dir), Task: "web", MaxFiles: 2, MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseWriters()
	if err := p.Ready(ctx); !errors.Is(err, beneath.ErrUnsafe) || !strings.Contains(err.Error(), "web.stdout.0 is a symbolic link") {
		t.Fatalf("Ready with a planted link = %v, want the shipper's refusal", err)
	}
	waitExit(t, ctx, p, "shipper still running after reporting its error")
}

// TestReadyHonoursContext: a cancelled wait returns at once and leaves
// the shipper running (a task may already be writing to it).
func TestReadyHonoursContext(t *testing.T) {
	dir := t.TempDir()
	p := spawn(t, Config{Command: []string{shipper}, Dir: openLogs(t, dir), Task: "web", MaxFiles: 2, MaxFileSize: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Ready(ctx); !errors.Is(err, context.Canceled) {
		// The shipper may have been quicker than the select; only a
		// different error is wrong.
		if err != nil {
			t.Fatalf("Ready(cancelled) = %v", err)
		}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := p.Ready(ctx2); err != nil {
		t.Fatalf("shipper did not come up after a cancelled wait: %v", err)
	}
}

func TestSpawnBadCommand(t *testing.T) {
	if _, err := Spawn(Config{Dir: openLogs(t, t.TempDir()), Task: "web"}); err == nil {
		t.Fatal("Spawn without a command succeeded")
	}
	if _, err := Spawn(Config{Command: []string{shipper}, Task: "web"}); err == nil {
		t.Fatal("Spawn without a log directory succeeded")
	}
	if _, err := Spawn(Config{Command: []string{"/nonexistent/logmon"}, Dir: openLogs(t, t.TempDir()), Task: "web"}); err == nil {
		t.Fatal("Spawn of a missing binary succeeded")
	}
}

// spawn starts a shipper that the test's cleanup kills.
func spawn(t *testing.T, cfg Config) *Process {
	t.Helper()
	p, err := Spawn(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.CloseWriters()
		_ = p.proc.Kill()
		<-p.Done()
	})
	return p
}

// waitExit fails the test with msg unless the shipper exits before ctx ends.
func waitExit(t *testing.T, ctx context.Context, p *Process, msg string) {
	t.Helper()
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatal(msg)
	}
}
