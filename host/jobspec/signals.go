package jobspec

import "syscall"

// SignalByName maps a kill_signal name to its number, so the task runner
// never needs its own table. Nomad accepts any signal name, including ones
// that cannot end a process (SIGSTOP, SIGCONT, SIGWINCH, ...); those turn
// every stop into a wait for kill_timeout, so pluginhost refuses them. Every
// name accepted here is also valid in Nomad.
func SignalByName(name string) (syscall.Signal, bool) {
	switch name {
	case "SIGABRT":
		return syscall.SIGABRT, true
	case "SIGALRM":
		return syscall.SIGALRM, true
	case "SIGHUP":
		return syscall.SIGHUP, true
	case "SIGINT":
		return syscall.SIGINT, true
	case "SIGKILL":
		return syscall.SIGKILL, true
	case "SIGQUIT":
		return syscall.SIGQUIT, true
	case "SIGTERM":
		return syscall.SIGTERM, true
	case "SIGUSR1":
		return syscall.SIGUSR1, true
	case "SIGUSR2":
		return syscall.SIGUSR2, true
	}
	return 0, false
}

// KillSignalNames lists the names SignalByName accepts, sorted.
func KillSignalNames() []string {
	return []string{"SIGABRT", "SIGALRM", "SIGHUP", "SIGINT", "SIGKILL", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2"}
}
