package seccomp

// archProbes: an arm64 process cannot make an AArch32 call without
// switching to that state, so only the static test checks the arch here.
func archProbes() map[string]func() (string, error) { return nil }
