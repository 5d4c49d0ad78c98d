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

// want is one expected diagnostic, written in a corpus file's leading
// comment as `# want: LINE:COL: Summary`.
type want struct {
	line, col int
	summary   string
}

// readWants collects the `# want:` lines at the top of a corpus file; a file
// may expect several diagnostics.
func readWants(t *testing.T, src []byte) []want {
	t.Helper()
	var out []want
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "# want: ")
		if !ok {
			break
		}
		parts := strings.SplitN(rest, ":", 3)
		if len(parts) != 3 {
			t.Fatalf("malformed want line %q", sc.Text())
		}
		line, err1 := strconv.Atoi(parts[0])
		col, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("malformed want line %q", sc.Text())
		}
		out = append(out, want{line, col, strings.TrimSpace(parts[2])})
	}
	if len(out) == 0 {
		t.Fatal("corpus file has no `# want: LINE:COL: Summary` line")
	}
	return out
}

// CheckBadCorpus runs every file of dir through parse and checks that each
// expected diagnostic is reported at its position, that every diagnostic is
// located, and that the rendered error shows file:line:col.
func CheckBadCorpus(t *testing.T, dir string, parse func(path string) error) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files in %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wants := readWants(t, src)
			err = parse(f)
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
