package logmon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// TestTailFollowsRotation writes a rotated series the way the log shipper
// does and checks that the tail copies every byte once, in order, also when
// older files are deleted under it.
func TestTailFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	write := func(n int, s string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, "web.stdout."+string(rune('0'+n))), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	tail := &Tail{Dir: openLogs(t, dir), Base: "web.stdout.", W: &out}
	if err := tail.CopyAvailable(); err != nil || out.Len() != 0 {
		t.Fatalf("empty dir: %q %v", out.String(), err)
	}
	write(0, "a1\n")
	write(0, "a2\n")
	if err := tail.CopyAvailable(); err != nil {
		t.Fatal(err)
	}
	write(0, "a3\n")
	write(1, "b1\n")
	write(2, "c1\n")
	// The shipper deletes the oldest file beyond max_files.
	os.Remove(filepath.Join(dir, "web.stdout.0"))
	if err := tail.CopyAvailable(); err != nil {
		t.Fatal(err)
	}
	write(2, "c2\n")
	write(5, "f1\n")
	// stderr is another series, never copied into stdout.
	os.WriteFile(filepath.Join(dir, "web.stderr.2"), []byte("stderr\n"), 0o644)
	if err := tail.CopyAvailable(); err != nil {
		t.Fatal(err)
	}
	// a3 was written to file 0 after the first copy and deleted before the
	// next one: like Nomad, a rotated-away file is gone.
	want := "a1\na2\nb1\nc1\nc2\nf1\n"
	if out.String() != want {
		t.Fatalf("tail copied %q, want %q", out.String(), want)
	}
}

// A log file replaced by a link to a secret (the agent's token file) is
// never read through: the tail stops with an error naming it.
func TestTailRefusesPlantedLinks(t *testing.T) {
	for _, plant := range []string{"symlink", "hard link"} {
		t.Run(plant, func(t *testing.T) {
			dir := t.TempDir()
			secret := filepath.Join(t.TempDir(), "acl-tokens.json")
			if err := os.WriteFile(secret, []byte("management-5ecret"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "web.stdout.0"), []byte("line\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			link := os.Symlink
			if plant == "hard link" {
				link = os.Link
			}
			if err := link(secret, filepath.Join(dir, "web.stdout.7")); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err := (&Tail{Dir: openLogs(t, dir), Base: "web.stdout.", W: &out}).CopyAvailable()
			if !errors.Is(err, beneath.ErrUnsafe) || !strings.Contains(err.Error(), "web.stdout.7") {
				t.Fatalf("got %v, want a refusal naming web.stdout.7", err)
			}
			if strings.Contains(out.String(), "5ecret") {
				t.Fatalf("the secret was read: %q", out.String())
			}
		})
	}
}
