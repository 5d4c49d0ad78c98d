//go:build !unix

package sdk

// sessionLeader is false where there are no sessions: a console's Ctrl-C
// reaches every process attached to it, the plugin's host included, so a
// plugin under a host must ignore it, as on unix when it shares its host's
// session.
func sessionLeader() bool { return false }

// ignoreBrokenPipe has nothing to do: without SIGPIPE, a write to a pipe
// whose reader is gone only fails.
func ignoreBrokenPipe() {}
