package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// FuzzParseConfig checks that no agent config panics the parser and that
// every failure is located.
func FuzzParseConfig(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, examplePath)
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// Relative job paths resolve inside testdata/good, where sleep.hcl
		// exists, so the fuzzer can reach the success path.
		c, err := Parse(src, filepath.Join("testdata", "good", "fuzz.hcl"))
		if err == nil {
			if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
				t.Fatalf("accepted config with data_dir %q", c.DataDir)
			}
			if verr := c.Validate(); verr != nil {
				t.Fatalf("Parse accepted what Validate refuses: %v", verr)
			}
			return
		}
		var de *hclstrict.DiagnosticsError
		if !errors.As(err, &de) {
			t.Fatalf("error is %T: %v", err, err)
		}
		for _, d := range de.Diags {
			if d.Subject == nil {
				t.Fatalf("diagnostic without location: %s", d.Summary)
			}
		}
		_ = de.Error()
	})
}
