package jobspec

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestCanonicalizeMatchesParse: a JSON submitter who leaves every default
// out gets the job the parser builds from the same minimal file.
func TestCanonicalizeMatchesParse(t *testing.T) {
	src := `job "web" {
  type = "batch"
  group "g" {
    count = 0
    task "t" {
      driver = "go_plugin"
      config { command = "/bin/true" }
      csi_plugin {
        id   = "p"
        type = "node"
      }
    }
    task "x" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
}
`
	want, err := Parse([]byte(src), "web.hcl")
	if err != nil {
		t.Fatal(err)
	}
	got := &Job{ID: "web", Type: JobTypeBatch, TaskGroups: []*TaskGroup{{
		Name: "g", Count: 0,
		Tasks: []*Task{{
			Name: "t", Driver: DriverGoPlugin, Config: &TaskConfig{Command: "/bin/true"},
			CSIPluginConfig: &TaskCSIPluginConfig{ID: "p", Type: CSIPluginTypeNode},
		}, {
			// exec's defaults: private namespaces (the user is the agent's choice).
			Name: "x", Driver: DriverExec, Config: &TaskConfig{Command: "/bin/true"},
		}},
	}}}
	Canonicalize(got)
	if err := Validate(got); err != nil {
		t.Fatalf("canonical job invalid: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Canonicalize gave\n%+v\nParse gave\n%+v", got, want)
	}
	Canonicalize(want)
	if err := Validate(want); err != nil {
		t.Errorf("parsed job invalid after Canonicalize: %v", err)
	}
}

func TestValidateNamesFields(t *testing.T) {
	job := &Job{ID: "../x", TaskGroups: []*TaskGroup{{
		Name: "g", Count: -5,
		Restart: &RestartPolicy{Attempts: 1, Mode: RestartModeFail},
		Tasks: []*Task{nil, {
			Name: "a/b", Driver: DriverRawExec, Config: &TaskConfig{Command: "x", Checksum: "sha256:00"},
			KillTimeout: -time.Second,
		}},
	}}}
	Canonicalize(job)
	err := Validate(job)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want a *ValidationError", err)
	}
	got := map[string]string{}
	for _, p := range ve.Problems {
		got[p.Field] = p.Summary
	}
	want := map[string]string{
		"ID":                                     "Invalid job ID",
		"TaskGroups[0].Count":                    "Value out of range",
		"TaskGroups[0].Restart.Interval":         "Invalid restart policy",
		"TaskGroups[0].Tasks[0]":                 "Missing task",
		"TaskGroups[0].Tasks[1].Name":            "Invalid task name",
		"TaskGroups[0].Tasks[1].KillTimeout":     "Invalid duration",
		"TaskGroups[0].Tasks[1].Config.Checksum": "Unsupported argument",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems %v\nwant %v", got, want)
	}
}

// Group finds a group by name, and is safe on a job that is not there.
func TestJobGroup(t *testing.T) {
	web, db := &TaskGroup{Name: "web"}, &TaskGroup{Name: "db"}
	j := &Job{TaskGroups: []*TaskGroup{web, db}}
	if j.Group("db") != db || j.Group("web") != web || j.Group("cache") != nil {
		t.Fatal("Group did not find the group by name")
	}
	if (*Job)(nil).Group("web") != nil {
		t.Fatal("Group of a nil job")
	}
}
