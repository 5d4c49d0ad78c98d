package jobspec

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParseFullJob(t *testing.T) {
	job, err := ParseFile(filepath.Join("testdata", "good", "full.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	groupRestart := &RestartPolicy{Attempts: 5, Interval: 10 * time.Minute, Delay: 20 * time.Second, Mode: RestartModeDelay}
	want := &Job{
		ID: "full", Name: "full", Type: JobTypeService,
		Datacenters: []string{"dc1", "dc2*"},
		Meta:        map[string]string{"team": "storage"},
		SourcePath:  job.SourcePath,
		TaskGroups: []*TaskGroup{{
			Name: "plugins", Count: 2,
			Restart: groupRestart,
			Meta:    map[string]string{"tier": "gold"},
			Volumes: map[string]*VolumeRequest{"data": {
				Name: "data", Type: "csi", Source: "vol-data", ReadOnly: true,
				AccessMode: AccessModeMultiNodeReader, AttachmentMode: AttachmentModeFilesystem,
				MountOptions: &CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime", "nodev"}},
				PerAlloc:     true,
			}},
			Tasks: []*Task{
				{
					Name: "node", Driver: DriverGoPlugin,
					Config: &TaskConfig{
						Command:  "mockcsi",
						Args:     []string{"--node-id=${node.unique.name}", "--state-dir=${NOMAD_TASK_DIR}/state"},
						WorkDir:  "${NOMAD_ALLOC_DIR}",
						Checksum: "sha256:abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
					},
					Env: map[string]string{
						"OWNER": "${NOMAD_META_team}", "INDEX": "${NOMAD_ALLOC_INDEX}",
						"LITERAL": "${NOMAD_ALLOC_ID}", "NUMBER": "42",
					},
					Meta: map[string]string{"role": "node"},
					// Only attempts is overridden; the rest comes from the group.
					Restart:     &RestartPolicy{Attempts: 1, Interval: 10 * time.Minute, Delay: 20 * time.Second, Mode: RestartModeDelay},
					KillTimeout: 20 * time.Second, KillSignal: "SIGTERM",
					Logs:      &LogConfig{MaxFiles: 4, MaxFileSizeMB: 2, Disabled: true},
					Resources: &Resources{CPU: 250, MemoryMB: 128},
					CSIPluginConfig: &TaskCSIPluginConfig{
						ID: "mock.csi", Type: CSIPluginTypeNode, MountDir: "/csi-node",
						StagePublishBaseDir: "/local/csi", HealthTimeout: time.Minute,
					},
					VolumeMounts: []*VolumeMount{{Volume: "data", Destination: "/srv/data", ReadOnly: true}},
				},
				{
					Name: "controller", Driver: DriverRawExec,
					Config:      &TaskConfig{Command: "/usr/bin/mockcsi", Args: []string{"--endpoint=${CSI_ENDPOINT}"}},
					Env:         map[string]string{},
					Meta:        map[string]string{},
					Restart:     groupRestart,
					KillTimeout: DefaultKillTimeout, KillSignal: DefaultKillSignal,
					Logs:      &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileMB},
					Resources: &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB},
					CSIPluginConfig: &TaskCSIPluginConfig{
						ID: "mock.csi", Type: CSIPluginTypeController, MountDir: DefaultCSIMountDir,
						StagePublishBaseDir: DefaultCSIStagePublishBaseDir, HealthTimeout: DefaultCSIHealthTimeout,
					},
				},
				{
					Name: "worker", Driver: DriverExec, User: "www-data",
					Config: &TaskConfig{
						Command: "/usr/bin/worker", WorkDir: "/srv",
						// ipc_mode is left out: exec's default.
						PIDMode: IsolationModeHost, IPCMode: IsolationModePrivate,
						CapAdd: []string{"net_bind_service", "CAP_CHOWN"}, CapDrop: []string{"all"},
					},
					Env:         map[string]string{},
					Meta:        map[string]string{},
					Restart:     groupRestart,
					KillTimeout: DefaultKillTimeout, KillSignal: DefaultKillSignal,
					Logs:      &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileMB},
					Resources: &Resources{CPU: 200, MemoryMB: 64, MemoryMaxMB: 256},
				},
			},
		}},
	}
	if !reflect.DeepEqual(job, want) {
		t.Errorf("parsed job differs from expectation")
		for i, g := range job.TaskGroups {
			wg := want.TaskGroups[i]
			for j, task := range g.Tasks {
				if !reflect.DeepEqual(task, wg.Tasks[j]) {
					t.Errorf("task %s:\n got %+v\nwant %+v", task.Name, task, wg.Tasks[j])
				}
			}
		}
	}
	// Policies are copies: mutating one task's must not touch the group's.
	if job.TaskGroups[0].Tasks[1].Restart == job.TaskGroups[0].Restart {
		t.Error("task and group share one *RestartPolicy")
	}
}

const minimalJob = `
job "min" {
  type = %q
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
`

func TestDefaultsPerJobType(t *testing.T) {
	service := RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail}
	batch := RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartModeFail}
	for _, tc := range []struct {
		typ  string
		want RestartPolicy
	}{
		{JobTypeService, service},
		{JobTypeSystem, service},
		{JobTypeBatch, batch},
		{JobTypeSysBatch, batch},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			job, err := Parse([]byte(fmt.Sprintf(minimalJob, tc.typ)), "min.hcl")
			if err != nil {
				t.Fatal(err)
			}
			g := job.TaskGroups[0]
			task := g.Tasks[0]
			if *g.Restart != tc.want || *task.Restart != tc.want {
				t.Errorf("restart = group %+v task %+v, want %+v", *g.Restart, *task.Restart, tc.want)
			}
			if job.SourcePath != "" {
				t.Errorf("Parse set SourcePath %q; only ParseFile should", job.SourcePath)
			}
			if !reflect.DeepEqual(job.Datacenters, []string{"*"}) || g.Count != 1 {
				t.Errorf("datacenters %q count %d, want [*] and 1", job.Datacenters, g.Count)
			}
			if task.KillTimeout != 5*time.Second || task.KillSignal != "SIGINT" {
				t.Errorf("kill %s %s, want 5s SIGINT", task.KillTimeout, task.KillSignal)
			}
			if *task.Logs != (LogConfig{MaxFiles: 10, MaxFileSizeMB: 10}) {
				t.Errorf("logs %+v", *task.Logs)
			}
			if job.Meta == nil || g.Meta == nil || task.Env == nil || task.Meta == nil || g.Volumes == nil {
				t.Error("maps must be non-nil")
			}
		})
	}
}

func TestDefaultTypeIsService(t *testing.T) {
	src := `job "x" {
  group "g" {
    count = 0
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`
	job, err := Parse([]byte(src), "x.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if job.Type != JobTypeService || job.TaskGroups[0].Count != 0 {
		t.Errorf("type %q count %d, want service and an explicit 0", job.Type, job.TaskGroups[0].Count)
	}
}

func TestNullMeansUnset(t *testing.T) {
	src := `job "x" {
  group "g" {
    count = null
    task "t" {
      driver       = "raw_exec"
      kill_timeout = null
      config { command = "/bin/true" }
    }
  }
}`
	job, err := Parse([]byte(src), "x.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if job.TaskGroups[0].Count != 1 || job.TaskGroups[0].Tasks[0].KillTimeout != DefaultKillTimeout {
		t.Errorf("null did not fall back to defaults: count %d kill_timeout %s",
			job.TaskGroups[0].Count, job.TaskGroups[0].Tasks[0].KillTimeout)
	}
}
