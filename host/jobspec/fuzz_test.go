package jobspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

// FuzzParse checks that no input panics the parser and that every failure is
// a located diagnostic, which is what the CLI and API rely on to point users
// at their mistake.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/bad/*.hcl", "testdata/good/*.hcl", filepath.Join(examplesDir, "*.hcl")} {
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
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("job \"a\" { group \"g\" { task \"t\" { driver = \"raw_exec\"\tconfig { command = \"${node}\" } } } }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := Parse(src, "fuzz.hcl")
		if err == nil {
			if job == nil || job.ID == "" || len(job.TaskGroups) == 0 {
				t.Fatalf("nil error but job = %+v", job)
			}
			for _, g := range job.TaskGroups {
				for _, task := range g.Tasks {
					if task.Config == nil || task.Restart == nil || task.Logs == nil || task.Resources == nil {
						t.Fatalf("task %q lacks defaults: %+v", task.Name, task)
					}
				}
			}
			return
		}
		corpustest.CheckLocated(t, err)
	})
}

// FuzzParseDeepAndWide feeds the parser what random bytes rarely reach:
// deep and wide files, built from fuzzed pieces repeated up to past the
// size limit, prefix + open×n + middle + close×n + suffix. Nested brackets,
// operator chains, templates in templates, long lists and many blocks must
// each end in a job or a located error. A stack overflow is not a panic:
// it ends the fuzzer's process, which reports the input as a crash.
func FuzzParseDeepAndWide(f *testing.F) {
	const job = "job \"x\" {\n  group \"g\" {\n    count = "
	const rest = "\n    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n  }\n}\n"
	const group = "  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n  }\n"
	for _, s := range []struct {
		prefix, open, middle, close, suffix string
		n                                   uint32
	}{
		{job, "(", "1", ")", rest, 200_000},
		{job, "[", "1", "][0]", rest, 100_000},
		{job, `"${`, "1", `}"`, rest, 100_000},
		{job, "-", "1", "", rest, 500_000},
		{job, "!", "true ? 1 : 2", "", rest, 500_000},
		{job, "1 + ", "1", "", rest, 200_000},
		{job, "true ? 1 : ", "1", "", rest, 100_000},
		{job, `"%{ if true }`, "1", `%{ endif }"`, rest, 50_000},
		{job, "{a = ", "1", "}.a", rest, 100_000},
		{job, "[for x in [1]: ", "x", "][0]", rest, 50_000},
		{job, "[1][0]", "", "", rest, 100_000},
		{job + "[", "1, ", "", "", "1][0]" + rest, 300_000},
		{"job \"x\" {\n", group, "", "", "}\n", 20_000},
		{"job \"x\" {\n", group, "", "", "}\n", MaxGroups + 1},
		{"job \"x\" {\n  group \"g\" {\n", "    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n", "", "", "  }\n}\n", 10_000},
		{"job \"x\" {\n", "  meta {\n", "", "  }\n", "}\n", 100_000},
		{job + "<<EOF\n", "${<<EOF\n", "1", "\nEOF\n}", "\nEOF\n" + rest, 50_000},
	} {
		f.Add(s.prefix, s.open, s.middle, s.close, s.suffix, s.n)
	}
	f.Fuzz(func(t *testing.T, prefix, open, middle, close, suffix string, n uint32) {
		// Up to just past the size limit, so that the size check is
		// reached too and every file stays quick to refuse.
		unit := max(len(open)+len(close), 1)
		reps := min(int(n), (MaxFileSize+64<<10)/unit)
		src := prefix + strings.Repeat(open, reps) + middle + strings.Repeat(close, reps) + suffix
		job, err := Parse([]byte(src), "fuzz.hcl")
		if err != nil {
			corpustest.CheckLocated(t, err)
			return
		}
		if job == nil || len(job.TaskGroups) == 0 || len(job.TaskGroups) > MaxGroups {
			t.Fatalf("nil error but job = %+v", job)
		}
	})
}
