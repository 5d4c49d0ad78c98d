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
	r, err := NewRotator(dir, "web.stdout", 3, 100)
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
	r2, err := NewRotator(dir, "web.stdout", 3, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.idx != 7 {
		t.Fatalf("reopened at index %d, want 7", r2.idx)
	}
}

func TestRotatorRejectsBadLimits(t *testing.T) {
	if _, err := NewRotator(t.TempDir(), "x", 0, 10); err == nil {
		t.Fatal("max files 0 accepted")
	}
	if _, err := NewRotator(filepath.Join(t.TempDir(), "missing"), "x", 1, 10); err == nil {
		t.Fatal("missing dir accepted")
	}
}

// TestShipperProcess runs the real shipper process: it must
// write both streams and exit by itself once the writers are closed.
func TestShipperProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{Command: []string{shipper}, Dir: dir, Task: "web", MaxFiles: 2, MaxFileSize: 1000})
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

func TestShipperReportsBadDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Start(ctx, Config{Command: []string{shipper}, Dir: "/nonexistent/logs", Task: "web", MaxFiles: 2, MaxFileSize: 1000})
	if err == nil || !strings.Contains(err.Error(), "log dir") {
		t.Fatalf("Start with a missing dir = %v, want the shipper's error", err)
	}
}

// TestSpawnAcceptsOutputBeforeReady: a task launched right after Spawn
// writes before the shipper has its files open; nothing may be lost.
func TestSpawnAcceptsOutputBeforeReady(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := spawn(t, Config{Command: []string{shipper}, Dir: dir, Task: "web", MaxFiles: 2, MaxFileSize: 1 << 20})
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

// TestSpawnReportsBadDirOnReady: Spawn succeeds (the process starts); the
// shipper's complaint arrives through Ready, and the shipper is gone.
func TestSpawnReportsBadDirOnReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Spawn(Config{Command: []string{shipper}, Dir: "/nonexistent/logs", Task: "web", MaxFiles: 2, MaxFileSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseWriters()
	if err := p.Ready(ctx); err == nil || !strings.Contains(err.Error(), "log dir") {
		t.Fatalf("Ready with a missing dir = %v, want the shipper's error", err)
	}
	waitExit(t, ctx, p, "shipper still running after reporting its error")
}

// TestReadyHonoursContext: a cancelled wait returns at once and leaves
// the shipper running (a task may already be writing to it).
func TestReadyHonoursContext(t *testing.T) {
	dir := t.TempDir()
	p := spawn(t, Config{Command: []string{shipper}, Dir: dir, Task: "web", MaxFiles: 2, MaxFileSize: 1000})
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
	if _, err := Spawn(Config{Dir: t.TempDir(), Task: "web"}); err == nil {
		t.Fatal("Spawn without a command succeeded")
	}
	if _, err := Spawn(Config{Command: []string{"/nonexistent/logmon"}, Dir: t.TempDir(), Task: "web"}); err == nil {
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
