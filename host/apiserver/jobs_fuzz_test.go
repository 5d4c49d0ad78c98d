package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// pathBackend accepts a job by laying it out on disk the way the agent
// does: an allocation dir per group instance, a dir and log files per task,
// a CSI mount dir per plugin. Every name is joined into the path as the
// task runner joins it, so a name the validator lets through that is not a
// single path element shows up as a path outside the data dir.
type pathBackend struct {
	*fakeBackend
	mu      sync.Mutex
	dataDir string
	calls   int
	escaped []string
}

func (b *pathBackend) RunJob(_ context.Context, job *jobspec.Job) (*api.JobRegisterResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	var paths []string
	for _, g := range job.TaskGroups {
		for i := range min(g.Count, 2) {
			// Real allocation IDs are UUIDs; here the job's names stand
			// in for them so that they reach a path too.
			allocDir := filepath.Join(b.dataDir, "alloc", job.ID, g.Name, fmt.Sprint(i))
			for alias := range g.Volumes {
				paths = append(paths, filepath.Join(allocDir, "volumes", alias))
			}
			for _, t := range g.Tasks {
				paths = append(paths, filepath.Join(allocDir, t.Name, "local"),
					filepath.Join(allocDir, "alloc", "logs", t.Name+".stdout.0"))
				if p := t.CSIPluginConfig; p != nil {
					paths = append(paths, filepath.Join(b.dataDir, "csi", p.Type, p.ID))
				}
			}
		}
	}
	for _, p := range paths {
		if rel, err := filepath.Rel(b.dataDir, p); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			b.escaped = append(b.escaped, p)
			continue
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("lay out job %q: %w", job.ID, err)
		}
	}
	for _, g := range job.TaskGroups {
		names := []struct{ kind, name string }{{"job ID", job.ID}, {"group", g.Name}}
		for alias := range g.Volumes {
			names = append(names, struct{ kind, name string }{"volume alias", alias})
		}
		for _, t := range g.Tasks {
			names = append(names, struct{ kind, name string }{"task name", t.Name})
			if t.CSIPluginConfig != nil {
				names = append(names, struct{ kind, name string }{"plugin ID", t.CSIPluginConfig.ID})
			}
		}
		for _, n := range names {
			// The validator must be at least as strict as the task
			// runner's own check, or the agent would fail the job late.
			if err := taskrunner.CheckPathElem(n.kind, n.name); err != nil {
				b.escaped = append(b.escaped, err.Error())
			}
		}
	}
	return &api.JobRegisterResponse{JobID: job.ID}, nil
}

// FuzzJSONJob: a JSON job body either is refused with a 4xx before reaching
// the backend, or is accepted and then names nothing outside the data dir.
// The server never answers 500 (a panic included) to bad input.
func FuzzJSONJob(f *testing.F) {
	be := &pathBackend{fakeBackend: newFakeBackend()}
	ts := startServer(f, func(c *ServerConfig) {
		c.Backend = be
		// Fuzz functions must not log through f.
		c.Logger = hclog.NewNullLogger()
	})
	valid := jobBody(f, validJob())
	f.Add(valid)
	for _, r := range [][2]string{
		{`"Name":"t"`, `"Name":"../../../escape"`},
		{`"ID":"web"`, `"ID":"../x"`},
		{`"ID":"web"`, `"ID":"a b"`},
		{`"ID":"web"`, `"ID":"."`},
		{`"Name":"g"`, `"Name":".."`},
		{`"Count":1`, `"Count":-5`},
		{`"Count":1`, `"Count":1001`},
		{`"Count":1`, `"Count":1e9`},
		{`"Restart":null`, `"Restart":{"Attempts":2,"Interval":0,"Delay":0,"Mode":"fail"}`},
		{`"Volumes":null`, `"Volumes":{"..":{"Type":"csi","Source":"s","AccessMode":"single-node-writer","AttachmentMode":"file-system"}}`},
		{`"CSIPluginConfig":null`, `"CSIPluginConfig":{"ID":"../../p","Type":"node"}`},
		{`"CSIPluginConfig":null`, `"CSIPluginConfig":{"ID":"p","Type":"../.."}`},
		{`"Env":null`, `"Env":{"A=B":"x","":"y"}`},
		{`"Tasks":[`, `"Tasks":[null,`},
		{`"TaskGroups":[`, `"TaskGroups":[null,`},
		{`"Config":{`, `"Config":null,"X":{`},
	} {
		if !strings.Contains(valid, r[0]) {
			f.Fatalf("seed mutation %q does not apply to %s", r[0], valid)
		}
		f.Add(strings.Replace(valid, r[0], r[1], 1))
	}
	f.Add(`{"Job":null}`)
	f.Add(`{"Job":{}}`)
	f.Add(`{"Job":{"ID":"x","TaskGroups":[{}]}}`)
	f.Add(`{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Tasks":[{}]}]}}`)

	f.Fuzz(func(t *testing.T, body string) {
		parent, err := os.MkdirTemp("", "phfuzz")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(parent)
		dataDir := filepath.Join(parent, "data")
		if err := os.Mkdir(dataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		be.mu.Lock()
		be.dataDir, be.calls, be.escaped = dataDir, 0, nil
		be.mu.Unlock()

		status, er := ts.rawDo(t, "POST", "/v1/jobs", body)

		be.mu.Lock()
		calls, escaped := be.calls, be.escaped
		be.mu.Unlock()
		switch {
		case status >= 500:
			t.Fatalf("status %d on bad input: %+v", status, er)
		case status >= 400 && calls != 0:
			t.Fatalf("refused job (%d, %s) reached the backend", status, er.Error)
		case status >= 400 && er.Field == "":
			t.Fatalf("refusal %d names no field: %s", status, er.Error)
		case status == 200 && calls != 1:
			t.Fatalf("accepted job reached the backend %d times", calls)
		}
		if len(escaped) > 0 {
			t.Fatalf("accepted job names paths outside %s: %q", dataDir, escaped)
		}
		entries, err := os.ReadDir(parent)
		if err != nil || len(entries) != 1 || entries[0].Name() != "data" {
			t.Fatalf("the data dir's parent holds %v (%v)", entries, err)
		}
	})
}
