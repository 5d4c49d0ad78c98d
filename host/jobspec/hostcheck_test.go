package jobspec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseIDRanges(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" with err set: refused
		err      string
		in0, out []uint32
	}{
		{in: "", want: ""},
		{in: "0", want: "0", in0: []uint32{0}, out: []uint32{1}},
		{in: "0,10-20", want: "0,10-20", in0: []uint32{0, 10, 15, 20}, out: []uint32{1, 9, 21}},
		{in: "0, 1000-1999", want: "0,1000-1999", in0: []uint32{1000}, out: []uint32{2000}},
		{in: "4294967295", want: "4294967295", in0: []uint32{4294967295}},
		{in: "20-10", err: "lower bound cannot be greater than upper bound"},
		{in: "x", err: `"x" is not a uid or gid`},
		{in: "0,", err: `"" is not a uid or gid`},
		{in: "1-2-3", err: `"2-3" is not a uid or gid`},
		{in: "4294967296", err: "not a uid or gid"},
		{in: "-1", err: "not a uid or gid"},
	} {
		r, err := ParseIDRanges(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseIDRanges(%q) = %v, %v; want error with %q", tc.in, r, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("ParseIDRanges(%q) = %q, %v; want %q", tc.in, r.String(), err, tc.want)
		}
		for _, id := range tc.in0 {
			if !r.Contains(id) {
				t.Errorf("%q does not contain %d", tc.in, id)
			}
		}
		for _, id := range tc.out {
			if r.Contains(id) {
				t.Errorf("%q contains %d", tc.in, id)
			}
		}
	}
}

// TestCheckHost runs CheckHost with an injected user database.
func TestCheckHost(t *testing.T) {
	users := map[string]*HostUser{
		"nobody":   {Name: "nobody", UID: 65534, GIDs: []uint32{65534}},
		"root":     {Name: "root", UID: 0, GIDs: []uint32{0}},
		"www-data": {Name: "www-data", UID: 33, GIDs: []uint32{33}},
		"admin":    {Name: "admin", UID: 1000, GIDs: []uint32{1000, 27}},
	}
	lookup := func(name string) (*HostUser, error) {
		if u, ok := users[name]; ok {
			return u, nil
		}
		return nil, fmt.Errorf("user: unknown user %s", name)
	}
	agent := func() (*HostUser, error) { return users["root"], nil }
	// The data dir is out of reach of everyone but root.
	unreachable := func(u *HostUser) error {
		if u.UID == 0 {
			return nil
		}
		return errors.New("/srv/x is drwx------ root:root and does not let it pass")
	}
	deny := func(s string) IDRanges {
		r, err := ParseIDRanges(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	job := func(driver, user, extra string) *Job {
		src := fmt.Sprintf(`job "web" {
  group "g" {
    task "t" {
      driver = %q
      %s
      config {
        command = "/bin/true"
        %s
      }
    }
  }
}`, driver, user, extra)
		j, err := Parse([]byte(src), "web.hcl")
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, tc := range []struct {
		name   string
		job    *Job
		policy HostPolicy
		want   string // "" = accepted; else a fragment of the only problem
		field  string
	}{
		{name: "exec runs as nobody by default", job: job("exec", "", ""),
			policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup, AgentUser: agent}},
		{name: "unknown user", job: job("exec", `user = "bob"`, ""), policy: HostPolicy{LookupUser: lookup},
			want: `job "web" group "g" task "t": user "bob" does not exist on this host`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "denied uid", job: job("exec", `user = "root"`, ""), policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup},
			want: `user "root" has uid 0: running as uid 0 is disallowed by denied_host_uids = "0"`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "denied supplementary gid", job: job("raw_exec", `user = "admin"`, ""),
			policy: HostPolicy{DeniedGIDs: deny("0,20-29"), LookupUser: lookup},
			want:   `is in group 27: running as gid 27 is disallowed by denied_host_gids = "0,20-29"`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "allowed user", job: job("raw_exec", `user = "www-data"`, ""),
			policy: HostPolicy{DeniedUIDs: deny("0-32"), DeniedGIDs: deny("0"), LookupUser: lookup}},
		{name: "raw_exec without user is the agent's user", job: job("raw_exec", "", ""),
			policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup, AgentUser: agent},
			want:   `no user given, so the agent's user "root" has uid 0`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "cap_add outside allow_caps", job: job("exec", "", `cap_add = ["net_raw"]`), policy: HostPolicy{LookupUser: lookup},
			want: "cap_add: driver does not allow the following capabilities: net_raw", field: "TaskGroups[0].Tasks[0].Config.CapAdd"},
		{name: "cap_add inside allow_caps", job: job("exec", "", `cap_add = ["net_raw"]`),
			policy: HostPolicy{LookupUser: lookup, AllowCaps: []string{"net_raw"}}},
		// An exec task without user is never the agent's user: it has a
		// dynamic uid, or it is nobody, who may be denied.
		{name: "exec with dynamic users is not checked as the agent", job: job("exec", "", ""),
			policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup, AgentUser: agent, DynamicUsers: true}},
		{name: "exec without dynamic users is nobody", job: job("exec", "", ""),
			policy: HostPolicy{DeniedUIDs: deny("65534"), LookupUser: lookup, AgentUser: agent},
			want:   `the exec driver's default user "nobody" has uid 65534`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "go_plugin's user is checked", job: job("go_plugin", `user = "root"`, ""),
			policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup},
			want:   `user "root" has uid 0`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "go_plugin without user is the agent's user", job: job("go_plugin", "", ""),
			policy: HostPolicy{DeniedUIDs: deny("0"), LookupUser: lookup, AgentUser: agent},
			want:   `no user given, so the agent's user "root"`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "pid_mode host refused", job: job("exec", "", `pid_mode = "host"`),
			policy: HostPolicy{LookupUser: lookup, HostModes: &HostModes{}},
			want:   `pid_mode = "host" shares the host's namespace with the task, and the agent does not allow it: set exec { allow_pid_mode_host = true }`,
			field:  "TaskGroups[0].Tasks[0].Config.PIDMode"},
		{name: "ipc_mode host refused", job: job("exec", "", `ipc_mode = "host"`),
			policy: HostPolicy{LookupUser: lookup, HostModes: &HostModes{PID: true}},
			want:   `allow_ipc_mode_host`, field: "TaskGroups[0].Tasks[0].Config.IPCMode"},
		{name: "pid_mode host allowed", job: job("exec", "", `pid_mode = "host"`),
			policy: HostPolicy{LookupUser: lookup, HostModes: &HostModes{PID: true}}},
		{name: "raw_exec as another user must reach its task directory", job: job("raw_exec", `user = "nobody"`, ""),
			policy: HostPolicy{LookupUser: lookup, ReachTaskDir: unreachable},
			want:   `user "nobody" (uid 65534) cannot reach its task directory under the agent's data_dir: /srv/x is drwx------ root:root`,
			field:  "TaskGroups[0].Tasks[0].User"},
		{name: "so must go_plugin", job: job("go_plugin", `user = "nobody"`, ""),
			policy: HostPolicy{LookupUser: lookup, ReachTaskDir: unreachable},
			want:   `A go_plugin task runs in place`, field: "TaskGroups[0].Tasks[0].User"},
		{name: "exec starts inside its own root", job: job("exec", `user = "nobody"`, ""),
			policy: HostPolicy{LookupUser: lookup, ReachTaskDir: unreachable}},
		{name: "the agent's own user reaches its data dir", job: job("raw_exec", "", ""),
			policy: HostPolicy{LookupUser: lookup, AgentUser: agent, ReachTaskDir: unreachable}},
		{name: "host modes unchecked without the agent's config", job: job("exec", "", `pid_mode = "host"`),
			policy: HostPolicy{LookupUser: lookup}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHost(tc.job, tc.policy)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			if p := ve.Problems[0]; p.Field != tc.field || !strings.Contains(p.Detail, tc.want) {
				t.Fatalf("problem %+v, want field %s and %q", p, tc.field, tc.want)
			}
		})
	}
}

// TestLookupOSUser: the real lookup finds root, with gid 0.
func TestLookupOSUser(t *testing.T) {
	u, err := LookupOSUser("root")
	if err != nil {
		t.Skipf("no root in this user database: %v", err)
	}
	if u.UID != 0 || !slices.Contains(u.GIDs, 0) {
		t.Fatalf("root = %+v", u)
	}
	if _, err := LookupOSUser("no-such-user-pluginhost"); err == nil {
		t.Fatal("an unknown user was found")
	}
	if _, err := CurrentOSUser(); err != nil {
		t.Fatal(err)
	}
}
