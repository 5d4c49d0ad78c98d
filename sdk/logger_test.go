package sdk

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestNewLoggerLevelAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.log")
	t.Setenv(EnvLogFile, path)
	t.Setenv(EnvLogLevel, "warn")
	l := NewLogger("demo")
	l.Info("dropped below the host's level")
	l.Warn("kept", "k", 1)

	lines := readLog(t, path)
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1: %v", len(lines), lines)
	}
	got := lines[0]
	if got["@level"] != "warn" || got["@message"] != "kept" || got["@module"] != "demo" || got["k"] != float64(1) {
		t.Fatalf("line = %v", got)
	}
	if _, ok := got["@timestamp"]; !ok {
		t.Fatalf("line has no @timestamp: %v", got)
	}
}

func TestNewLoggerDefaultsAndBadFile(t *testing.T) {
	t.Setenv(EnvLogLevel, "loud")
	t.Setenv(EnvLogFile, filepath.Join(t.TempDir(), "missing-dir", "plugin.log"))
	l := NewLogger("")
	if !l.IsInfo() || l.IsDebug() {
		t.Fatalf("unknown level should mean info")
	}
	if l.Name() == "" {
		t.Fatal("empty name should default to the program name")
	}
	l.Info("still logs to stderr") // must not panic with no file
}

// A plugin running as root never appends through a link planted at its
// log file's name, nor to a second name of another file: the host file
// stays as it was and the plugin logs to stderr only.
func TestNewLoggerRefusesPlantedLogFile(t *testing.T) {
	for _, plant := range []string{"symlink", "hard link", "dangling symlink"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			host := filepath.Join(t.TempDir(), "passwd")
			if err := os.WriteFile(host, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "plugin.log")
			var err error
			switch plant {
			case "symlink":
				err = os.Symlink(host, path)
			case "hard link":
				err = os.Link(host, path)
			case "dangling symlink":
				err = os.Symlink(filepath.Join(filepath.Dir(host), "new-file"), path)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv(EnvLogFile, path)
			NewLogger("demo").Warn("evil:x:0:0::/:/bin/sh")
			if b, _ := os.ReadFile(host); string(b) != "root:x:0:0::/root:/bin/sh\n" {
				t.Fatalf("the host file was written through the log file: %q", b)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(host), "new-file")); err == nil {
				t.Fatal("a file was created through the dangling link")
			}
		})
	}
}
