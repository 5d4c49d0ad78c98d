package jobspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/internal/badjobs"
)

func BenchmarkParseDemo(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(examplesDir, "demo.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse(src, "demo.hcl"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFull(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "good", "full.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse(src, "full.hcl"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseErrors measures the failure path including rendering, which
// the API pays on every rejected submission.
func BenchmarkParseErrors(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("testdata", "bad", "many-errors.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, err := Parse(src, "many-errors.hcl")
		if err == nil {
			b.Fatal("want an error")
		}
		_ = err.Error()
	}
}

func BenchmarkInterpolate(b *testing.B) {
	vars := map[string]string{VarCSIEndpoint: "unix:///var/lib/pluginhost/sockets/0b6e/csi.sock", VarNodeName: "node-1"}
	b.ReportAllocs()
	for b.Loop() {
		_ = Interpolate("--endpoint=${CSI_ENDPOINT} --node-id=${node.unique.name} ${UNKNOWN}", vars)
	}
}

// BenchmarkParseRefused measures the refusal of issue 26's files, with the
// error's text, as the API and the CLI pay for it.
func BenchmarkParseRefused(b *testing.B) {
	for name, src := range map[string][]byte{
		"nested": badjobs.NestedParens(badjobs.IssueNesting),
		"wide":   badjobs.ManyGroups(badjobs.IssueGroups, badjobs.IssueCount),
		// Within the size limit, refused after parsing, before decoding.
		"groups": groupsOfTasks(MaxGroups+1, 1, 1),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				_, err := Parse(src, name+".hcl")
				if err == nil {
					b.Fatal("want an error")
				}
				_ = err.Error()
			}
		})
	}
}
