package taskrunner

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// Who a task runs as: its user, its dynamic uid, nobody, or the agent;
// with a user of its own it also holds the allocation's group.
func TestUserHookResolves(t *testing.T) {
	const group = 80000
	cases := []struct {
		name, driver, user string
		dynamic            uint32
		owners             allocdir.Owners
		wantUID            uint32
		wantNil            bool
		wantGroup          bool
	}{
		{"exec with a dynamic uid", jobspec.DriverExec, "", 80001, allocdir.Owners{Group: group}, 80001, false, true},
		{"exec without range runs as nobody", jobspec.DriverExec, "", 0, allocdir.NoGroup(true), 65534, false, false},
		{"exec with a user", jobspec.DriverExec, "nobody", 80001, allocdir.Owners{Group: group}, 65534, false, true},
		{"raw_exec with a user", jobspec.DriverRawExec, "nobody", 0, allocdir.Owners{Group: group}, 65534, false, true},
		{"go_plugin with a user", jobspec.DriverGoPlugin, "nobody", 0, allocdir.Owners{Group: group}, 65534, false, true},
		{"raw_exec without a user is the agent's", jobspec.DriverRawExec, "", 0, allocdir.Owners{Group: group}, 0, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &HookRequest{Task: &jobspec.Task{Name: "t", Driver: c.driver, User: c.user}, Owners: c.owners, DynamicUID: c.dynamic}
			if err := (&userHook{cfg: &Config{}}).Prestart(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if c.wantNil {
				if req.User != nil {
					t.Fatalf("user %+v, want the agent's (nil)", req.User)
				}
				return
			}
			if req.User == nil || req.User.UID != c.wantUID {
				t.Fatalf("user %+v, want uid %d", req.User, c.wantUID)
			}
			if got := slices.Contains(req.User.Groups, group); got != c.wantGroup {
				t.Fatalf("groups %v: has the allocation's group %v, want %v", req.User.Groups, got, c.wantGroup)
			}
		})
	}
}

// A denied user is refused, and the refusal is fatal: no restart helps.
func TestUserHookDenied(t *testing.T) {
	req := &HookRequest{Task: &jobspec.Task{Name: "t", Driver: jobspec.DriverRawExec, User: "nobody"}, Owners: allocdir.NoGroup(true)}
	cfg := &Config{UserAllowed: func(*driver.User) error { return errors.New("denied by denied_host_uids") }}
	err := (&userHook{cfg: cfg}).Prestart(context.Background(), req)
	if err == nil || !IsFatal(err) || req.User != nil {
		t.Fatalf("denied user: %v (fatal %v), user %+v", err, IsFatal(err), req.User)
	}
}

// A task without a user runs as the agent's, which the denied ids may
// name: it is refused at launch too (a job recorded before the
// configuration changed).
func TestUserHookDeniesTheAgentsUser(t *testing.T) {
	req := &HookRequest{Task: &jobspec.Task{Name: "t", Driver: jobspec.DriverGoPlugin}, Owners: allocdir.NoGroup(true)}
	me := uint32(os.Geteuid())
	cfg := &Config{UserAllowed: func(u *driver.User) error {
		if u.UID == me {
			return errors.New("running as the agent's uid is disallowed")
		}
		return nil
	}}
	err := (&userHook{cfg: cfg}).Prestart(context.Background(), req)
	if err == nil || !IsFatal(err) || !strings.Contains(err.Error(), "no user given, so the agent's user") {
		t.Fatalf("agent's user denied: %v", err)
	}
}
