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
