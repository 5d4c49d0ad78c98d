package jobspec

import "fmt"

// Numeric bounds shared by the HCL decoder, which names them when a value is
// not a whole number, and Validate, which enforces them.
const (
	// maxCount bounds a group's count: one machine does not run more.
	maxCount = 1000

	maxRestartAttempts = 1000

	minCPU      = 1
	maxCPU      = 1 << 20
	minMemoryMB = 10
	maxMemoryMB = 1 << 24

	// maxUserLen bounds a user name: Linux allows 32 bytes, NSS sources
	// more, nobody needs 256.
	maxUserLen = 256

	minLogFiles  = 1
	maxLogFiles  = 1000
	minLogFileMB = 1
	maxLogFileMB = 1 << 16
)

// Bounds on a job's size, each refused with a located error before the job
// is decoded any further (MaxFileSize and hclstrict's nesting and chain
// limits come before the parser). A job at any of them is far past what
// one machine runs: issue 26's 2.8 MB job of 20,000 groups of count 1000
// (20 million allocations) validated before they existed.
const (
	// MaxGroups bounds a job's groups. Nomad's own examples have one to
	// a handful; a hundred is a generated file or a mistake.
	MaxGroups = 100

	// MaxTasksPerGroup bounds one group's tasks: they all run in each of
	// its allocations, a main task and its sidecars.
	MaxTasksPerGroup = 100

	// MaxAllocs bounds the sum of a job's group counts, by the reason
	// that bounds one group's (maxCount).
	MaxAllocs = maxCount

	// MaxTasks bounds the tasks a job runs at once: a group's tasks once
	// per allocation, and once for a group of count 0, whose tasks are
	// still decoded, validated and stored. Every task is a process and a
	// log shipper beside it, so this is 2,000 processes.
	MaxTasks = 1000
)

func tooManyGroups(n int) (summary, detail string) {
	return "Too many groups", fmt.Sprintf("A job may have at most %d groups; this one has %d, and this is group %d. Split it into several jobs.",
		MaxGroups, n, MaxGroups+1)
}

func tooManyTasksInGroup(group string, n int) (summary, detail string) {
	return "Too many tasks", fmt.Sprintf("A group may have at most %d tasks; group %q has %d, and this is task %d.",
		MaxTasksPerGroup, group, n, MaxTasksPerGroup+1)
}
