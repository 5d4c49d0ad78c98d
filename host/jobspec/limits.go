package jobspec

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
