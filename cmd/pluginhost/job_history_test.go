package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

func TestJobHistoryAndRevert(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)

	r := runCLI(t, ctx, addr, "job", "revert", "-detach", "sleep", "0")
	if r.code == 0 || !strings.Contains(r.stderr, "JobVersion") {
		t.Errorf("revert to the current version: %+v", r)
	}
	fa.mu.Lock()
	fa.jobs["sleep"].Version = 2
	fa.mu.Unlock()

	r = runCLI(t, ctx, addr, "job", "history", "sleep")
	for _, want := range []string{"Version     = 2\n", "Version     = 1\n", "Version     = 0\n", "Groups      = "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("job history lacks %q: %+v", want, r)
		}
	}
	if strings.Index(r.stdout, "Version     = 2") > strings.Index(r.stdout, "Version     = 0") {
		t.Errorf("job history is not newest first:\n%s", r.stdout)
	}
	r = runCLI(t, ctx, addr, "job", "history", "-json", "-version", "1", "sleep")
	var vs []*api.Job
	if err := json.Unmarshal([]byte(r.stdout), &vs); err != nil || len(vs) != 1 || vs[0].Version != 1 {
		t.Errorf("job history -json -version 1: %v %+v", err, r)
	}
	if r := runCLI(t, ctx, addr, "job", "history", "-version", "9", "sleep"); r.code != 1 {
		t.Errorf("history of a missing version: %+v", r)
	}

	r = runCLI(t, ctx, addr, "job", "revert", "-detach", "sleep", "1")
	if r.code != 0 || !strings.Contains(r.stdout, `Job "sleep" reverted to version 1`) {
		t.Errorf("job revert: %+v", r)
	}
	if r := runCLI(t, ctx, addr, "job", "revert", "sleep", "x"); r.code != 1 {
		t.Errorf("revert to a non-number: %+v", r)
	}
	if r := runCLI(t, ctx, addr, "job", "history", "nope"); r.code == 0 {
		t.Errorf("history of an unknown job: %+v", r)
	}
}
