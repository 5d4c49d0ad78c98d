package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// mount is one cgroup filesystem from /proc/self/mountinfo.
type mount struct {
	dir string
	v2  bool
	// controllers are the v1 controllers attached to the hierarchy (from
	// the super options: "rw,cpu,cpuacct" → cpu, cpuacct). Named
	// hierarchies without a controller (name=systemd) have none.
	controllers []string
}

// cgroupMounts reads the cgroup and cgroup2 mounts from a mountinfo file.
// The first mount of a hierarchy wins: a hierarchy bind-mounted a second
// time (into a container's rootfs, say) is the same cgroups.
func cgroupMounts(r io.Reader) ([]mount, error) {
	var out []mount
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		// "36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory"
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf := strings.Fields(pre)
		qf := strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		fstype := qf[0]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		dev := pf[2]
		if seen[dev] {
			continue
		}
		seen[dev] = true
		m := mount{dir: mountinfo.Unescape(pf[4]), v2: fstype == "cgroup2"}
		if !m.v2 {
			for opt := range strings.SplitSeq(qf[2], ",") {
				switch {
				case opt == "rw" || opt == "ro" || strings.HasPrefix(opt, "name="),
					strings.Contains(opt, "="), opt == "noprefix", opt == "clone_children",
					opt == "xattr", opt == "cpuset_v2_mode", opt == "favordynmods":
					continue
				}
				m.controllers = append(m.controllers, opt)
			}
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	return out, nil
}
