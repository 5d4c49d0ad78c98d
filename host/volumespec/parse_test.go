package volumespec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

func TestParseFileIOErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ParseFile(filepath.Join(dir, "nope.hcl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ParseFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(big); err == nil || !strings.Contains(err.Error(), big+":1:1048577: Volume file too large") {
		t.Errorf("oversized file: %v", err)
	}
}

func TestSyntaxChoice(t *testing.T) {
	for _, c := range []struct {
		src, name string
		json      bool
	}{
		{`id = "a"`, "v.hcl", false},
		{`id = "a"`, "v.json", true},
		{`{"id": "a"}`, "v.JSON", true},
		{"\n\t {\"id\": \"a\"}", "volume", true},
		{"\xef\xbb\xbf{}", "-", true},
		{"# {\n", "v.hcl", false},
		{"", "v", false},
	} {
		if got := isJSON([]byte(c.src), c.name); got != c.json {
			t.Errorf("isJSON(%q, %q) = %v", c.src, c.name, got)
		}
	}
}

// TestJSONStringsAreLiteral pins a difference between the syntaxes: HCL's
// JSON reads "${...}" literally when there is no evaluation context, where
// native syntax refuses the reference. Either way no placeholder is
// expanded.
func TestJSONStringsAreLiteral(t *testing.T) {
	src := `{"id": "v1", "name": "${x}", "type": "csi", "plugin_id": "mockcsi",
	  "capability": {"access_mode": "single-node-writer", "attachment_mode": "file-system"}}`
	v, err := Parse([]byte(src), "v.json")
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "${x}" {
		t.Errorf("Name = %q", v.Name)
	}
}

func TestDiagnosticText(t *testing.T) {
	src := "id = \"v1\"\ntype = \"csi\"\nplugin_id = \"mockcsi\"\ncapacity_min = \"ten\"\n"
	_, err := Parse([]byte(src), "volume.hcl")
	var de *hclstrict.DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("got %T: %v", err, err)
	}
	text := err.Error()
	for _, want := range []string{
		"volume.hcl:4:16: Invalid capacity_min",
		`   4: capacity_min = "ten"`,
		"volume.hcl:1:1: Missing capability",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("error text lacks %q:\n%s", want, text)
		}
	}
}

// A JSON volume file's strings are taken as written, never parsed as
// templates (the decoder gives hcl no evaluation context), so templates
// nested in one another cannot overflow the parser there: here 100,000 of
// them, which in a native syntax file would.
func TestJSONStringsAreNotTemplates(t *testing.T) {
	deep := strings.Repeat("${", 100_000) + strings.Repeat("}", 100_000)
	src := `{"id": "a", "name": "a", "type": "csi", "plugin_id": "p",
	  "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
	  "parameters": {"k": "` + deep + `"}}`
	v, err := Parse([]byte(src), "deep.json")
	if err != nil {
		t.Fatal(err)
	}
	if v.Parameters["k"] != deep {
		t.Errorf("the parameter was not taken as written")
	}
}
