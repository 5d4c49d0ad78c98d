// Package corpustest checks corpora of malformed HCL files against the
// diagnostics they must produce. Each file states its expectations in
// leading comment lines:
//
//	# want: 4:5: Unsupported argument
//	# want: 9:13: Value out of range
//
// meaning that a diagnostic whose summary contains the text starts at that
// line and column. The comment lines count: positions are those of the file
// as it is on disk. Shared by host/jobspec and host/config so that both file
// kinds keep the same promise: every error is located.
package corpustest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// want is one expected diagnostic: `LINE:COL: Summary`.
type want struct {
	line, col int
	summary   string
}

// parseWant reads one `LINE:COL: Summary` expectation.
func parseWant(t *testing.T, file, text string) want {
	t.Helper()
	parts := strings.SplitN(text, ":", 3)
	if len(parts) != 3 {
		t.Fatalf("%s: malformed want line %q", file, text)
	}
	line, err1 := strconv.Atoi(parts[0])
	col, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: malformed want line %q", file, text)
	}
	return want{line, col, strings.TrimSpace(parts[2])}
}

// readWants collects a corpus file's expectations: the `# want:` lines at
// the top of an HCL file, or for a JSON file (JSON has no comments) the
// lines of its NAME.json.want sidecar. A file may expect several.
func readWants(t *testing.T, file string) []want {
	t.Helper()
	var out []want
	if strings.HasSuffix(file, ".json") {
		src, err := os.ReadFile(file + ".want")
		if err != nil {
			t.Fatalf("every JSON corpus file needs a .want sidecar: %v", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) != "" {
				out = append(out, parseWant(t, file+".want", sc.Text()))
			}
		}
	} else {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		for sc.Scan() {
			rest, ok := strings.CutPrefix(sc.Text(), "# want: ")
			if !ok {
				break
			}
			out = append(out, parseWant(t, file, rest))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no `LINE:COL: Summary` expectation (`# want:` lines, or a .json.want sidecar)", file)
	}
	return out
}

// CheckBadCorpus runs every .hcl and .json file of dir through parse and
// checks that each expected diagnostic is reported at its position, that
// every diagnostic is located, and that the rendered error shows
// file:line:col. A .json.want sidecar without its file is an error too.
func CheckBadCorpus(t *testing.T, dir string, parse func(path string) error) {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.hcl", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sidecars, err := filepath.Glob(filepath.Join(dir, "*.json.want"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range sidecars {
		if _, err := os.Stat(strings.TrimSuffix(w, ".want")); err != nil {
			t.Errorf("%s has no corpus file: %v", w, err)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files in %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wants := readWants(t, f)
			err := parse(f)
			var de *hclstrict.DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("want a *hclstrict.DiagnosticsError, got %T: %v", err, err)
			}
			text := err.Error()
			for _, d := range de.Diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without location: %s: %s", d.Summary, d.Detail)
				}
			}
			for _, w := range wants {
				found := false
				for _, d := range de.Diags {
					if d.Subject != nil && d.Subject.Start.Line == w.line && d.Subject.Start.Column == w.col &&
						strings.Contains(d.Summary, w.summary) {
						found = true
					}
				}
				if !found {
					t.Errorf("want %d:%d: %s; got:\n%s", w.line, w.col, w.summary, text)
				}
				if loc := fmt.Sprintf("%s:%d:%d: ", f, w.line, w.col); !strings.Contains(text, loc) {
					t.Errorf("error text lacks %q:\n%s", loc, text)
				}
			}
		})
	}
}

// CheckLocated fails t unless err is a *hclstrict.DiagnosticsError with at
// least one diagnostic, every one located, and a non-empty text: the
// promise every parse error keeps, which the fuzz targets check.
func CheckLocated(t testing.TB, err error) {
	t.Helper()
	var de *hclstrict.DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("error is %T, not a DiagnosticsError: %v", err, err)
	}
	if len(de.Diags) == 0 {
		t.Fatal("DiagnosticsError without diagnostics")
	}
	for _, d := range de.Diags {
		if d.Subject == nil {
			t.Fatalf("diagnostic without location: %s: %s", d.Summary, d.Detail)
		}
	}
	if de.Error() == "" {
		t.Fatal("empty error text")
	}
}
