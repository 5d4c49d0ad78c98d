package jobspec

import (
	"os"
	"path/filepath"
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
