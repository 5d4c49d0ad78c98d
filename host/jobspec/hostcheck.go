package jobspec

import (
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// Checks that need the host: whether a task's user exists here and is
// allowed, and whether the exec driver may grant its capabilities. They are
// not part of Validate, which must give the same answer on every machine;
// the agent runs CheckHost when a job is submitted, and `job validate` on
// the machine it runs on.

// IDRange is an inclusive range of uids or gids.
type IDRange struct{ Lo, Hi uint32 }

// IDRanges is a set of uids or gids written in Nomad's syntax for
// denied_host_uids and denied_host_gids: comma-separated ids and lo-hi
// ranges, "0,10-20" (drivers/shared/validators/validators.go). The empty
// string is the empty set.
type IDRanges []IDRange

// ParseIDRanges reads Nomad's range syntax. Like Nomad it refuses an id
// that is not a uint32 and a range whose low end is above its high end;
// unlike Nomad it also refuses "1-2-3" (Nomad's check lets it through and
// its parser then ignores it) and tolerates spaces after commas.
func ParseIDRanges(s string) (IDRanges, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out IDRanges
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		l, err := strconv.ParseUint(lo, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid range %q: %q is not a uid or gid (0 to 4294967295)", part, lo)
		}
		h := l
		if isRange {
			if h, err = strconv.ParseUint(hi, 10, 32); err != nil {
				return nil, fmt.Errorf("invalid range %q: %q is not a uid or gid (0 to 4294967295)", part, hi)
			}
			if l > h {
				return nil, fmt.Errorf("invalid range %q: lower bound cannot be greater than upper bound", part)
			}
		}
		out = append(out, IDRange{Lo: uint32(l), Hi: uint32(h)})
	}
	return out, nil
}

// Contains reports whether id is in one of the ranges.
func (r IDRanges) Contains(id uint32) bool {
	return slices.ContainsFunc(r, func(x IDRange) bool { return id >= x.Lo && id <= x.Hi })
}

// String writes the ranges back in Nomad's syntax.
func (r IDRanges) String() string {
	parts := make([]string, len(r))
	for i, x := range r {
		parts[i] = strconv.FormatUint(uint64(x.Lo), 10)
		if x.Hi != x.Lo {
			parts[i] += "-" + strconv.FormatUint(uint64(x.Hi), 10)
		}
	}
	return strings.Join(parts, ",")
}

// HostUser is what CheckHost needs to know of a host user.
type HostUser struct {
	Name string
	UID  uint32
	// GIDs are the user's primary and supplementary groups.
	GIDs []uint32
}

// HostPolicy is the agent's side of CheckHost.
type HostPolicy struct {
	// DeniedUIDs and DeniedGIDs are the agent's denied_host_uids and
	// denied_host_gids: no task may run as such a user, or as a user in
	// such a group.
	DeniedUIDs, DeniedGIDs IDRanges
	// AllowCaps is the exec driver's allow_caps: the capabilities cap_add
	// may ask for. nil means Nomad's default, NomadDefaultCapabilities.
	AllowCaps []string
	// LookupUser finds a user by name; LookupOSUser is the real one. An
	// error makes the task's user unknown.
	LookupUser func(name string) (*HostUser, error)
	// AgentUser is the user the agent runs as, which raw_exec and
	// go_plugin tasks without `user` run as; CurrentOSUser is the real one.
	// nil skips the denied-id check of such tasks.
	AgentUser func() (*HostUser, error)
	// DynamicUsers says the agent gives an exec task without `user` a
	// uid of its own (its users block); its configuration keeps that
	// range clear of the denied ids. Without it such a task runs as
	// nobody, who is checked.
	DynamicUsers bool
	// ReachTaskDir, when not nil, checks that a user may reach a task
	// directory by path (allocdir.Reach), as a raw_exec or go_plugin task
	// running as another user must; nil skips it (job validate does not
	// know the agent's data_dir).
	ReachTaskDir func(u *HostUser) error
	// HostModes, when not nil, says which of pid_mode and ipc_mode =
	// "host" the agent's exec driver allows; nil skips the check (job
	// validate does not know the agent's configuration).
	HostModes *HostModes
}

// HostModes is what the agent's exec block allows: the host's pid
// namespace, the host's ipc namespace.
type HostModes struct{ PID, IPC bool }

// CheckHost checks job against this host: each task's user must exist and
// not be denied, and an exec task's cap_add must be allowed. It returns a
// *ValidationError whose problems name the field (as Validate's do) and, in
// their detail, the group and task; nil when the job can run here. job must
// be valid (Parse or Validate).
func CheckHost(job *Job, p HostPolicy) error {
	if job == nil {
		return errors.New("check host: no job")
	}
	v := &validation{}
	for i, g := range job.TaskGroups {
		if g == nil {
			continue
		}
		for j, t := range g.Tasks {
			if t == nil {
				continue
			}
			f := fmt.Sprintf("TaskGroups[%d].Tasks[%d]", i, j)
			where := fmt.Sprintf("job %q group %q task %q", job.ID, g.Name, t.Name)
			v.hostUser(f+".User", where, t, p)
			if t.Driver == DriverExec && t.Config != nil {
				if _, err := ExecCapabilities(t.Config, p.AllowCaps); err != nil {
					v.Add(f+".Config.CapAdd", "Capability not allowed", "%s: cap_add: %v (allowed: %s).",
						where, err, strings.Join(capNames(p.AllowCaps), ", "))
				}
				v.hostModes(f, where, t.Config, p.HostModes)
			}
		}
	}
	if len(v.Problems) > 0 {
		return &ValidationError{Problems: v.Problems}
	}
	return nil
}

// capNames is the allow list as the driver holds it, sorted.
func capNames(allow []string) []string {
	if allow == nil {
		allow = NomadDefaultCapabilities
	}
	set := capSet(allow)
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// hostModes refuses pid_mode or ipc_mode = "host" that the agent's exec
// block does not allow. Nomad's exec driver grants both to any job; here
// they are the operator's to give, because an exec task keeps CAP_SETUID
// and in the host's pid namespace it reaches every process of the host.
func (v *validation) hostModes(f, where string, c *TaskConfig, allow *HostModes) {
	if allow == nil {
		return
	}
	for _, m := range []struct {
		key, field, val string
		ok              bool
	}{{"pid_mode", ".Config.PIDMode", c.PIDMode, allow.PID}, {"ipc_mode", ".Config.IPCMode", c.IPCMode, allow.IPC}} {
		if m.val == IsolationModeHost && !m.ok {
			v.Add(f+m.field, "Host mode not allowed",
				"%s: %s = %q shares the host's namespace with the task, and the agent does not allow it: set exec { allow_%s_host = true } in the agent's configuration to allow it.",
				where, m.key, m.val, m.key)
		}
	}
}

func (v *validation) hostUser(f, where string, t *Task, p HostPolicy) {
	var (
		u    *HostUser
		err  error
		what string
	)
	switch {
	case t.User == "" && t.Driver == DriverExec && p.DynamicUsers:
		return
	case t.User == "" && t.Driver == DriverExec:
		if p.LookupUser == nil {
			return
		}
		if u, err = p.LookupUser(DefaultExecUser); err != nil {
			v.Add(f, "Unknown user", "%s: no user given, and the exec driver's default user %q does not exist on this host: %v.", where, DefaultExecUser, err)
			return
		}
		what = fmt.Sprintf("no user given, so the exec driver's default user %q", DefaultExecUser)
	case t.User != "":
		what = fmt.Sprintf("user %q", t.User)
		if p.LookupUser == nil {
			err = errors.New("no user lookup configured")
		} else {
			u, err = p.LookupUser(t.User)
		}
		if err != nil {
			v.Add(f, "Unknown user", "%s: user %q does not exist on this host: %v.", where, t.User, err)
			return
		}
	case p.AgentUser == nil:
		return
	default:
		if u, err = p.AgentUser(); err != nil {
			v.Add(f, "Unknown user", "%s: no user given, and the agent's own user cannot be looked up: %v.", where, err)
			return
		}
		what = fmt.Sprintf("no user given, so the agent's user %q", u.Name)
	}
	// Nomad's words: "running as uid %d is disallowed"
	// (drivers/shared/validators/validators.go, HasValidIDs).
	if p.DeniedUIDs.Contains(u.UID) {
		v.Add(f, "User not allowed", "%s: %s has uid %d: running as uid %d is disallowed by denied_host_uids = %q.",
			where, what, u.UID, u.UID, p.DeniedUIDs.String())
		return
	}
	for _, gid := range u.GIDs {
		if p.DeniedGIDs.Contains(gid) {
			v.Add(f, "User not allowed", "%s: %s is in group %d: running as gid %d is disallowed by denied_host_gids = %q.",
				where, what, gid, gid, p.DeniedGIDs.String())
			return
		}
	}
	// exec tasks start inside their own root, made by the agent; the
	// others run in place under the data dir, whose parents are the
	// operator's. Found at submission, not as "fork/exec /bin/sh:
	// permission denied" restarting for ever.
	if t.User != "" && t.Driver != DriverExec && p.ReachTaskDir != nil {
		if err := p.ReachTaskDir(u); err != nil {
			v.Add(f, "Task directory out of reach",
				"%s: user %q (uid %d) cannot reach its task directory under the agent's data_dir: %v. A %s task runs in place, as its user: give that directory search permission (chmod o+x), give the agent a data_dir every task user can reach, or use the exec driver.",
				where, t.User, u.UID, err, t.Driver)
		}
	}
}

// LookupOSUser is HostPolicy.LookupUser for this machine (os/user: the
// user database, by name, as Nomad's users.Lookup).
func LookupOSUser(name string) (*HostUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("look up user: %w", err)
	}
	return hostUser(u)
}

// CurrentOSUser is HostPolicy.AgentUser for this process.
func CurrentOSUser() (*HostUser, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("current user: %w", err)
	}
	return hostUser(u)
}

func hostUser(u *user.User) (*HostUser, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: uid %q is not a number: %w", u.Username, u.Uid, err)
	}
	hu := &HostUser{Name: u.Username, UID: uint32(uid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %q: groups: %w", u.Username, err)
	}
	if !slices.Contains(ids, u.Gid) {
		ids = append(ids, u.Gid)
	}
	for _, s := range ids {
		g, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %q: gid %q is not a number: %w", u.Username, s, err)
		}
		hu.GIDs = append(hu.GIDs, uint32(g))
	}
	return hu, nil
}
