package volumespec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

// FuzzParse checks that no input panics the parser, in either syntax, and
// that every failure is a located diagnostic: the CLI and the API rely on
// that to point users at their mistake.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/bad/*.hcl", "testdata/bad/*.json", "testdata/bad/*/*.hcl", "testdata/good/*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, strings.HasSuffix(s, ".json"))
	}
	f.Add([]byte(ExampleHCL), false)
	f.Add([]byte(ExampleJSON), true)
	f.Add([]byte(""), false)
	f.Add([]byte("[]"), true)
	f.Add([]byte(`[{"id": "a"}, {"id": "b"}]`), true)
	f.Fuzz(func(t *testing.T, src []byte, asJSON bool) {
		name := "fuzz.hcl"
		if asJSON {
			name = "fuzz.json"
		}
		for _, op := range []Op{0, OpCreate, OpRegister} {
			v, err := parse(src, name, op)
			if err == nil {
				if v == nil || v.ID == "" || v.Name == "" || v.Type != "csi" || len(v.RequestedCapabilities) == 0 {
					t.Fatalf("nil error but volume = %+v", v)
				}
				if verr := Validate(v); verr != nil {
					t.Fatalf("parsed volume fails Validate: %v", verr)
				}
				continue
			}
			corpustest.CheckLocated(t, err)
		}
	})
}

// FuzzParseBytes checks that sizes never panic, are never negative, and
// that FormatBytes writes every one back readably.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"10GiB", "1.5G", "100 MB", "1024", "-1", "1,000", ".5k", "8EiB", "1.", "0.001K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
		out := FormatBytes(n)
		if strings.HasPrefix(out, "~") {
			return
		}
		if back, err := ParseBytes(out); err != nil || back != n {
			t.Fatalf("ParseBytes(%q) = %d, FormatBytes gives %q, which reads back as %d, %v", s, n, out, back, err)
		}
	})
}
