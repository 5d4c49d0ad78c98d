package jobspec

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func goPluginJob(config string) string {
	return `job "j" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config {
        command = "p"
` + config + `
      }
    }
  }
}
`
}

func TestGoPluginConfigParses(t *testing.T) {
	job, err := Parse([]byte(goPluginJob(`
        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1, 2]
        }
        plugin {
          type = "kv"
          name = "kv_grpc"
        }`)), "j.hcl")
	if err != nil {
		t.Fatal(err)
	}
	c := job.TaskGroups[0].Tasks[0].Config
	if want := (&GoPluginHandshake{MagicCookieKey: "BASIC_PLUGIN", MagicCookieValue: "hello", ProtocolVersions: []int{1, 2}}); !reflect.DeepEqual(c.Handshake, want) {
		t.Errorf("handshake = %+v, want %+v", c.Handshake, want)
	}
	if want := (&GoPluginProvides{Type: "kv", Name: "kv_grpc", HealthTimeout: 30 * time.Second}); !reflect.DeepEqual(c.Plugin, want) {
		t.Errorf("plugin = %+v, want %+v", c.Plugin, want)
	}
	if len(JobNotesForTest(job)) != 1 {
		t.Errorf("want one note about the go_plugin task")
	}

	// The sdk's handshake is the default, one version.
	job, err = Parse([]byte(goPluginJob(`plugin {
          type = "kv"
          name = "a"
        }`)), "j.hcl")
	if err != nil || job.TaskGroups[0].Tasks[0].Config.Handshake != nil {
		t.Fatalf("plugin without handshake: %v, %+v", err, job)
	}
	// A JSON submission gets the same defaults.
	j2 := &Job{ID: "j", TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Driver: DriverGoPlugin,
		Config: &TaskConfig{Command: "p", Handshake: &GoPluginHandshake{MagicCookieKey: "K", MagicCookieValue: "v"},
			Plugin: &GoPluginProvides{Type: "kv", Name: "a"}}}}}}}
	Canonicalize(j2)
	c = j2.TaskGroups[0].Tasks[0].Config
	if !reflect.DeepEqual(c.Handshake.ProtocolVersions, []int{1}) || c.Plugin.HealthTimeout != DefaultPluginHealthTimeout {
		t.Errorf("canonicalized: %+v %+v", c.Handshake, c.Plugin)
	}
}

// JobNotesForTest is GoPluginNote over a job's tasks.
func JobNotesForTest(job *Job) []string {
	var out []string
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			if n := GoPluginNote(t); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

func TestGoPluginConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		want   []string // each must appear, with its position
	}{
		"unknown key": {`plugin {
          type = "kv"
          name = "a"
          bogus = 1
        }`, []string{`j.hcl:10:11: Unsupported argument`}},
		"missing name": {`plugin {
          type = "kv"
        }`, []string{`j.hcl:7:1: Missing plugin name`}},
		"csi type": {`plugin {
          type = "csi-node"
          name = "a"
        }`, []string{`j.hcl:8:18: Invalid plugin type`, `declare a CSI plugin with a csi_plugin block`}},
		"bad type": {`plugin {
          type = "KV/x"
          name = "a"
        }`, []string{`j.hcl:8:18: Invalid plugin type`}},
		"bad name": {`plugin {
          type = "kv"
          name = "a/b"
        }`, []string{`j.hcl:9:18: Invalid plugin name`}},
		"zero health_timeout": {`plugin {
          type = "kv"
          name = "a"
          health_timeout = "0s"
        }`, []string{`j.hcl:10:28: Invalid health_timeout`}},
		"handshake without plugin": {`handshake {
          magic_cookie_key = "K"
          magic_cookie_value = "v"
        }`, []string{`j.hcl:7:1: Missing plugin block`}},
		"bad cookie and versions": {`handshake {
          magic_cookie_key = "1K"
          magic_cookie_value = ""
          protocol_versions = [1, 1]
        }
        plugin {
          type = "kv"
          name = "a"
        }`, []string{`j.hcl:8:30: Invalid magic_cookie_key`, `j.hcl:9:32: Invalid magic_cookie_value`, `j.hcl:10:31: Invalid protocol_versions`}},
		"version out of range": {`handshake {
          magic_cookie_key = "K"
          magic_cookie_value = "v"
          protocol_versions = [0]
        }
        plugin {
          type = "kv"
          name = "a"
        }`, []string{`j.hcl:10:31: Invalid protocol_versions`}},
		"two plugin blocks": {`plugin {
          type = "kv"
          name = "a"
        }
        plugin {
          type = "kv"
          name = "b"
        }`, []string{`j.hcl:11:9:`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(goPluginJob(tc.config)), "j.hcl")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestGoPluginConfigOnlyForGoPlugin(t *testing.T) {
	src := strings.Replace(goPluginJob(`plugin {
          type = "kv"
          name = "a"
        }`), `"go_plugin"`, `"raw_exec"`, 1)
	_, err := Parse([]byte(src), "j.hcl")
	if err == nil || !strings.Contains(err.Error(), "j.hcl:7:1: Unsupported block") {
		t.Fatalf("err = %v", err)
	}
	src = strings.Replace(goPluginJob(`plugin {
          type = "kv"
          name = "a"
        }`), "      }\n    }", "      }\n      csi_plugin {\n        id = \"x\"\n        type = \"node\"\n      }\n    }", 1)
	_, err = Parse([]byte(src), "j.hcl")
	if err == nil || !strings.Contains(err.Error(), "Conflicting plugin blocks") {
		t.Fatalf("err = %v", err)
	}
}

func TestGoPluginDuplicateInGroup(t *testing.T) {
	task := func(name string) string {
		return `    task "` + name + `" {
      driver = "go_plugin"
      config {
        command = "p"
        plugin {
          type = "kv"
          name = "a"
        }
      }
    }
`
	}
	src := "job \"j\" {\n  group \"g\" {\n" + task("one") + task("two") + "  }\n}\n"
	_, err := Parse([]byte(src), "j.hcl")
	if err == nil || !strings.Contains(err.Error(), "j.hcl:17:9: Duplicate plugin") {
		t.Fatalf("err = %v", err)
	}
}
