package volumespec

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
	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

// The bad corpus is split by the rules a file is parsed with: testdata/bad
// with the rules common to create and register, bad/create and
// bad/register with those of one operation too.
var badCorpora = []struct {
	dir string
	op  Op
}{
	{filepath.Join("testdata", "bad"), 0},
	{filepath.Join("testdata", "bad", "create"), OpCreate},
	{filepath.Join("testdata", "bad", "register"), OpRegister},
}

func parseFileOp(path string, op Op) (*Volume, error) {
	if op == 0 {
		return ParseFile(path)
	}
	return ParseFileFor(path, op)
}

func TestBadVolumeFiles(t *testing.T) {
	for _, c := range badCorpora {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			corpustest.CheckBadCorpus(t, c.dir, func(path string) error {
				v, err := parseFileOp(path, c.op)
				if err == nil {
					return fmt.Errorf("parsed without error: %+v", v)
				}
				return err
			})
		})
	}
}

// TestBadJSONVolumeFiles is the corpus check for JSON files. JSON has no
// comments, so each NAME.json states its expectations in NAME.json.want,
// one `LINE:COL: Summary` a line, in corpustest's meaning.
func TestBadJSONVolumeFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no JSON corpus files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wants := readJSONWants(t, f+".want")
			_, err := ParseFile(f)
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
					found = found || d.Subject != nil && d.Subject.Start.Line == w.line &&
						d.Subject.Start.Column == w.col && strings.Contains(d.Summary, w.summary)
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

type jsonWant struct {
	line, col int
	summary   string
}

func readJSONWants(t *testing.T, path string) []jsonWant {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("every JSON corpus file needs a .want sidecar: %v", err)
	}
	var out []jsonWant
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			t.Fatalf("%s: malformed line %q", path, sc.Text())
		}
		line, err1 := strconv.Atoi(parts[0])
		col, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: malformed line %q", path, sc.Text())
		}
		out = append(out, jsonWant{line, col, strings.TrimSpace(parts[2])})
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no `LINE:COL: Summary` line", path)
	}
	return out
}

// TestEveryJSONWantHasItsFile keeps sidecars from outliving their files.
func TestEveryJSONWantHasItsFile(t *testing.T) {
	wants, err := filepath.Glob(filepath.Join("testdata", "bad", "*.want"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wants {
		if _, err := os.Stat(strings.TrimSuffix(w, ".want")); err != nil {
			t.Errorf("%s has no corpus file: %v", w, err)
		}
	}
}
