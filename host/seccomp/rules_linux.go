//go:build amd64 || arm64

package seccomp

import "golang.org/x/sys/unix"

// Namespace flags of clone(2). CLONE_NEWTIME is not one of them: in
// clone(2) its bit (0x80) belongs to the exit signal, and a time namespace
// can only be asked for through clone3 and unshare, both refused.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// rules is the deny list (see the package doc, "What is refused").
func rules(p Policy) ([]rule, error) {
	rs := []rule{
		// Keyrings are not namespaced: a task would see and fill the
		// host's.
		deny("add_key", unix.SYS_ADD_KEY),
		deny("request_key", unix.SYS_REQUEST_KEY),
		deny("keyctl", unix.SYS_KEYCTL),

		// Large kernel attack surface that ordinary programs do without.
		deny("bpf", unix.SYS_BPF),
		deny("perf_event_open", unix.SYS_PERF_EVENT_OPEN),
		deny("userfaultfd", unix.SYS_USERFAULTFD),
		deny("io_uring_setup", unix.SYS_IO_URING_SETUP),
		deny("io_uring_enter", unix.SYS_IO_URING_ENTER),
		deny("io_uring_register", unix.SYS_IO_URING_REGISTER),
		deny("fanotify_init", unix.SYS_FANOTIFY_INIT),
		deny("lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE),

		// The task's mounts are made before the filter; afterwards its
		// file system stays what the agent built (a task with
		// CAP_SYS_ADMIN could otherwise undo the root's fences).
		deny("mount", unix.SYS_MOUNT),
		deny("umount2", unix.SYS_UMOUNT2),
		deny("mount_setattr", unix.SYS_MOUNT_SETATTR),
		deny("move_mount", unix.SYS_MOVE_MOUNT),
		deny("open_tree", unix.SYS_OPEN_TREE),
		deny("open_tree_attr", unix.SYS_OPEN_TREE_ATTR),
		deny("fsopen", unix.SYS_FSOPEN),
		deny("fsconfig", unix.SYS_FSCONFIG),
		deny("fsmount", unix.SYS_FSMOUNT),
		deny("fspick", unix.SYS_FSPICK),
		deny("pivot_root", unix.SYS_PIVOT_ROOT),

		// The task stays in the namespaces it was started in.
		deny("setns", unix.SYS_SETNS),
		deny("unshare", unix.SYS_UNSHARE),
		// ENOSYS, not EPERM: glibc then falls back to clone, whose flags
		// the filter can read (clone3's are behind a pointer).
		{name: "clone3", nr: unix.SYS_CLONE3, errno: unix.ENOSYS},
		{name: "clone", nr: unix.SYS_CLONE, errno: unix.EPERM,
			when: &argTest{arg: 0, op: anyBit, values: []uint32{cloneNamespaces}}},

		// The machine's kernel, boot and clocks are the host's.
		deny("kexec_load", unix.SYS_KEXEC_LOAD),
		deny("kexec_file_load", unix.SYS_KEXEC_FILE_LOAD),
		deny("init_module", unix.SYS_INIT_MODULE),
		deny("finit_module", unix.SYS_FINIT_MODULE),
		deny("delete_module", unix.SYS_DELETE_MODULE),
		deny("reboot", unix.SYS_REBOOT),
		deny("swapon", unix.SYS_SWAPON),
		deny("swapoff", unix.SYS_SWAPOFF),
		deny("acct", unix.SYS_ACCT),
		deny("settimeofday", unix.SYS_SETTIMEOFDAY),
		deny("clock_settime", unix.SYS_CLOCK_SETTIME),
		deny("syslog", unix.SYS_SYSLOG),
		deny("quotactl", unix.SYS_QUOTACTL),
		deny("quotactl_fd", unix.SYS_QUOTACTL_FD),
		deny("nfsservctl", unix.SYS_NFSSERVCTL),
		deny("vhangup", unix.SYS_VHANGUP),
		// An exec task shares the host's UTS namespace.
		deny("sethostname", unix.SYS_SETHOSTNAME),
		deny("setdomainname", unix.SYS_SETDOMAINNAME),
		deny("lsm_get_self_attr", unix.SYS_LSM_GET_SELF_ATTR),
		deny("lsm_set_self_attr", unix.SYS_LSM_SET_SELF_ATTR),
		deny("lsm_list_modules", unix.SYS_LSM_LIST_MODULES),

		// NUMA placement is the host's to decide; Docker refuses these
		// without CAP_SYS_NICE.
		deny("get_mempolicy", unix.SYS_GET_MEMPOLICY),
		deny("set_mempolicy", unix.SYS_SET_MEMPOLICY),
		deny("set_mempolicy_home_node", unix.SYS_SET_MEMPOLICY_HOME_NODE),
		deny("mbind", unix.SYS_MBIND),
		deny("migrate_pages", unix.SYS_MIGRATE_PAGES),
		deny("move_pages", unix.SYS_MOVE_PAGES),

		// open_by_handle_at opens any file of a mount by its handle,
		// around the task's root (the "shocker" escape); the handles come
		// from name_to_handle_at.
		deny("name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT),
		deny("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT),

		// Other processes' descriptors and memory layout: Docker refuses
		// these without CAP_SYS_PTRACE even where it allows ptrace.
		deny("kcmp", unix.SYS_KCMP),
		deny("pidfd_getfd", unix.SYS_PIDFD_GETFD),
		deny("process_madvise", unix.SYS_PROCESS_MADVISE),

		// The personalities Docker lets a container set: Linux and 32-bit
		// Linux, each with UNAME26, and 0xffffffff, which only asks. The
		// others (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ...) switch off
		// defences of the task and of whatever it execs.
		{name: "personality", nr: unix.SYS_PERSONALITY, errno: unix.EPERM,
			when: &argTest{arg: 0, op: notIn, values: []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}}},
		// AF_ALG (38) is the kernel's crypto API, AF_VSOCK (40) talks to
		// the hypervisor; Docker refuses both.
		{name: "socket", nr: unix.SYS_SOCKET, errno: unix.EPERM,
			when: &argTest{arg: 0, op: in, values: []uint32{unix.AF_ALG, unix.AF_VSOCK}}},
	}
	if p.DenyPtrace {
		rs = append(rs,
			deny("ptrace", unix.SYS_PTRACE),
			deny("process_vm_readv", unix.SYS_PROCESS_VM_READV),
			deny("process_vm_writev", unix.SYS_PROCESS_VM_WRITEV),
		)
	}
	return append(rs, archRules()...), nil
}

// deny refuses a call with EPERM whatever its arguments, as Docker's
// default action does.
func deny(name string, nr uint32) rule {
	return rule{name: name, nr: nr, errno: unix.EPERM}
}
