// Package sdktest runs a plugin built with the sdk inside a Go test and hands
// back a connection to it, with typed CSI clients for a CSI plugin.
//
// Two ways to start one:
//
//   - Start(t, binaryPath) launches the real binary through go-plugin, exactly
//     as pluginhost does: cookie in the environment, version negotiation, a
//     socket in a fresh short directory, and the CSI clients dial that socket
//     with a plain gRPC client like pluginhost's CSI code. Use it to test the
//     binary you ship.
//   - StartInProcess(t, cfg) serves an sdk.Config in the test process on a
//     standalone socket (csi.sock, or plugin.sock for another type). Use it for fast unit tests of the servers, with
//     the race detector seeing both sides.
//
// Build(t, pkg) compiles a plugin's main package once per test process, so
// that a module outside this repository tests the binary it ships with
// Start(t, Build(t, ".")).
//
// Both return only once the plugin's socket accepts gRPC connections, and both
// register everything they create (process, connection, socket directory)
// with t.Cleanup, so a failing or panicking test leaves nothing behind.
//
// Socket directories come from os.MkdirTemp, not t.TempDir: test names make
// t.TempDir paths long, and unix socket paths are limited to 107 bytes.
package sdktest
