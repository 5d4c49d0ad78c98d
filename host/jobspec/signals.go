package jobspec

import (
	"sort"
	"syscall"
)

// killSignals are the names kill_signal accepts. Nomad accepts any signal
// name, including ones that cannot end a process (SIGSTOP, SIGCONT,
// SIGWINCH, ...); those turn every stop into a wait for kill_timeout, so
// pluginhost refuses them. Every name here is also valid in Nomad.
var killSignals = map[string]syscall.Signal{
	"SIGABRT": syscall.SIGABRT,
	"SIGALRM": syscall.SIGALRM,
	"SIGHUP":  syscall.SIGHUP,
	"SIGINT":  syscall.SIGINT,
	"SIGKILL": syscall.SIGKILL,
	"SIGQUIT": syscall.SIGQUIT,
	"SIGTERM": syscall.SIGTERM,
	"SIGUSR1": syscall.SIGUSR1,
	"SIGUSR2": syscall.SIGUSR2,
}

// SignalByName maps a validated kill_signal to its number, so the task runner
// never needs its own table.
func SignalByName(name string) (syscall.Signal, bool) {
	s, ok := killSignals[name]
	return s, ok
}

func killSignalNames() []string {
	out := make([]string, 0, len(killSignals))
	for n := range killSignals {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
