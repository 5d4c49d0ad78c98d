package driver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// A go-plugin plugin names the address it serves on in its handshake line,
// and go-plugin dials whatever it names. A task that announced another
// plugin's socket was registered healthy on it, and the agent sent that
// other plugin go-plugin's Shutdown when the task's job stopped. So the
// agent accepts an address only if it is the task's own:
//
//   - a unix socket inside the task's socket directory (which the agent
//     made, owned by the task's user), reached through no link, with one
//     link, owned by the directory's owner, and served by a process of the
//     task (SO_PEERCRED: its pid is the task's, in the task's session or
//     in its cgroup);
//   - a TCP address on loopback whose listening socket a process of the
//     task holds.
//
// The check runs when go-plugin reads the handshake (PluginToHost), when
// a plugin is reattached after an agent restart, and again on every gRPC
// dial. go-plugin's net/rpc client dials once, by itself: it is given the
// checked socket's /proc/self/fd name, which reaches that socket and no
// other, whatever the task does to the directory afterwards.

// taskIdentity is what makes a process one of the task's.
type taskIdentity struct {
	pid int
	cg  Cgroup
}

// owns reports whether pid is a process of the task: the task itself, one
// in its session (the task leads a session of its own), or one in its
// cgroup (a descendant that left the session).
func (id taskIdentity) owns(pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == id.pid {
		return true
	}
	if sid, err := unix.Getsid(pid); err == nil && sid == id.pid {
		return true
	}
	if id.cg != nil {
		if pids, err := id.cg.Pids(); err == nil {
			for _, p := range pids {
				if p == pid {
					return true
				}
			}
		}
	}
	return false
}

// pids lists the task's processes (for the TCP check): its cgroup's, or
// its session's when it has none.
func (id taskIdentity) pids() []int {
	if id.cg != nil {
		if ps, err := id.cg.Pids(); err == nil {
			return ps
		}
	}
	out := []int{id.pid}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == id.pid {
			continue
		}
		if sid, err := unix.Getsid(pid); err == nil && sid == id.pid {
			out = append(out, pid)
		}
	}
	return out
}

// pluginAddr is an address a plugin announced, checked.
type pluginAddr struct {
	network string
	// addr is the address as announced: a socket path, or host:port.
	addr string
	// sockDir is the task's socket directory and rel the socket in it.
	sockDir, rel string
}

// checkAnnounced accepts network and addr, announced by the task id whose
// socket directory is sockDir, or says why not.
func checkAnnounced(sockDir, network, addr string, id taskIdentity) (*pluginAddr, error) {
	switch network {
	case "unix":
		clean := filepath.Clean(addr)
		rel, err := filepath.Rel(sockDir, clean)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("the plugin announced the socket %s, outside its own socket directory %s: refused (a plugin serves on a socket of its own)", addr, sockDir)
		}
		a := &pluginAddr{network: network, addr: clean, sockDir: sockDir, rel: rel}
		c, err := a.dialUnix(context.Background(), id)
		if err != nil {
			return nil, err
		}
		_ = c.Close()
		return a, nil
	case "tcp":
		if err := checkTCP(addr, id); err != nil {
			return nil, err
		}
		return &pluginAddr{network: network, addr: addr}, nil
	}
	return nil, fmt.Errorf("the plugin announced network %q: only unix and tcp are known", network)
}

// openSocket opens the announced socket beneath the socket directory and
// checks that it is the directory owner's.
func (a *pluginAddr) openSocket() (*os.File, error) {
	dir, err := beneath.Open(a.sockDir)
	if err != nil {
		return nil, fmt.Errorf("plugin socket directory: %w", err)
	}
	defer dir.Close()
	owner, err := dir.Stat()
	if err != nil {
		return nil, err
	}
	f, err := dir.OpenSocket(a.rel)
	if err != nil {
		return nil, fmt.Errorf("the plugin's announced socket: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Uid != owner.Uid {
		_ = f.Close()
		return nil, fmt.Errorf("the plugin's announced socket %s belongs to uid %d, not to the task's user (uid %d, who owns %s): refused", a.addr, st.Uid, owner.Uid, a.sockDir)
	}
	return f, nil
}

// dialUnix connects to the announced socket through its descriptor and
// checks that a process of the task serves it.
func (a *pluginAddr) dialUnix(ctx context.Context, id taskIdentity) (net.Conn, error) {
	f, err := a.openSocket()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", beneath.ProcPathOf(f))
	if err != nil {
		return nil, fmt.Errorf("dial the plugin's socket %s: %w", a.addr, err)
	}
	cred, err := beneath.PeerCred(c.(*net.UnixConn))
	if err == nil && !id.owns(int(cred.Pid)) {
		err = fmt.Errorf("the plugin's announced socket %s is served by pid %d, which is not a process of the task (pid %d): refused", a.addr, cred.Pid, id.pid)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// dial is the checked dial of a (gRPC's dialer for the plugin).
func (a *pluginAddr) dial(ctx context.Context, id taskIdentity) (net.Conn, error) {
	if a.network == "unix" {
		return a.dialUnix(ctx, id)
	}
	if err := checkTCP(a.addr, id); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
	}
	return c, nil
}

// checkTCP accepts a loopback host:port whose listening socket a process
// of the task holds.
func checkTCP(addr string, id taskIdentity) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("the plugin announced %q, which is not an IP:port: %w", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return fmt.Errorf("the plugin announced %s, which is not a loopback address: refused (the agent talks to plugins on this machine only)", addr)
	}
	inodes, err := listeningInodes(ap)
	if err != nil {
		return err
	}
	if len(inodes) == 0 {
		return fmt.Errorf("the plugin announced %s, where nothing listens", addr)
	}
	// Every socket that could take the connection must be the task's,
	// not just one: the kernel picks among them, and a task listening on
	// [::]:P with IPV6_V6ONLY holds a "wildcard" that never takes
	// 127.0.0.1:P, which another user's service listens on.
	held := map[string]bool{}
	for _, pid := range id.pids() {
		heldInodes(pid, inodes, held)
	}
	if len(held) == len(inodes) {
		return nil
	}
	if len(held) == 0 {
		return fmt.Errorf("the plugin announced %s, which no process of the task (pid %d) listens on: refused", addr, id.pid)
	}
	return fmt.Errorf("the plugin announced %s, where %d of the %d listening sockets that could take a connection are not the task's (pid %d): refused", addr, len(inodes)-len(held), len(inodes), id.pid)
}

// listeningInodes returns the inodes of the TCP sockets listening on ap (on
// its address or on a wildcard, IPv4's or IPv6's), from /proc/net/tcp and
// tcp6: every socket a connection to ap might reach.
func listeningInodes(ap netip.AddrPort) (map[string]bool, error) {
	out := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list TCP sockets: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st ... uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			local, ok := parseProcAddr(fs[1])
			if ok && local.Port() == ap.Port() && (local.Addr() == ap.Addr().Unmap() || local.Addr().IsUnspecified()) {
				out[fs[9]] = true
			}
		}
		_ = f.Close()
	}
	return out, nil
}

// parseProcAddr reads /proc/net/tcp's "0100007F:04D2": the address in
// host byte order by 32-bit word, then the port.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || len(hexAddr)%8 != 0 {
		return netip.AddrPort{}, false
	}
	var b []byte
	for i := 0; i < len(hexAddr); i += 8 {
		w, err := strconv.ParseUint(hexAddr[i:i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		// Little-endian machines print each word byte-swapped.
		b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	a, ok := netip.AddrFromSlice(b)
	if !ok {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// heldInodes adds to held the socket inodes of inodes that pid has a
// descriptor of.
func heldInodes(pid int, inodes, held map[string]bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if in, ok := strings.CutPrefix(l, "socket:["); ok {
			if in = strings.TrimSuffix(in, "]"); inodes[in] {
				held[in] = true
			}
		}
	}
}
