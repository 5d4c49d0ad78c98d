package sdk

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// LaunchedByHost reports whether go-plugin's handshake cookie is in the
// environment, i.e. whether Serve will speak go-plugin rather than run as a
// standalone CSI driver.
func LaunchedByHost() bool {
	return os.Getenv(MagicCookieKey) == MagicCookieValue
}

// Serve runs the plugin until it is stopped and reports why it stopped.
//
// Launched by pluginhost it does go-plugin's handshake and serves until the
// host shuts it down or SIGTERM arrives. SIGINT stops it too when it leads
// its own session, as pluginhost starts every task (setsid): then a SIGINT
// can only be a deliberate kill_signal, and SIGINT is Nomad's default one.
// A plugin sharing its host's session ignores SIGINT as go-plugin intends,
// because a Ctrl-C in the host's terminal reaches it as well. Launched any
// other way it runs standalone
// on Config.Endpoint (or $CSI_ENDPOINT) until SIGTERM or SIGINT. Either way a
// stop is graceful: in-flight RPCs get Config.StopTimeout to finish.
//
// Serve also ignores SIGPIPE for the whole process: after its host dies a
// plugin's stdio is a broken pipe, and Go's default is to die on the first
// write to one.
//
// On Windows there is neither a session nor SIGPIPE: a plugin under a host
// ignores Ctrl-C, as go-plugin's own Serve does, and stops on SIGTERM (which
// Go delivers for the console's close, logoff and shutdown events) or the
// host's shutdown; a write to a broken pipe fails with an error there.
func Serve(cfg Config) error {
	ignoreBrokenPipe()
	sigs := []os.Signal{syscall.SIGTERM}
	if LaunchedByHost() && !sessionLeader() {
		signal.Ignore(syscall.SIGINT)
	} else {
		sigs = append(sigs, syscall.SIGINT)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	return ServeContext(ctx, cfg)
}

// ServeContext is Serve without signal handling: it serves until ctx is done
// (then stops gracefully) or, under pluginhost, until the host shuts the
// plugin down. Tests and programs that own their signals use it.
func ServeContext(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if LaunchedByHost() {
		return servePlugin(ctx, cfg)
	}
	return serveStandalone(ctx, cfg)
}

// ServeStandalone serves cfg as an ordinary CSI driver on cfg.Endpoint (or
// $CSI_ENDPOINT) until ctx is done, whatever the environment says. sdktest
// uses it to run a plugin in-process.
func ServeStandalone(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	return serveStandalone(ctx, cfg)
}

// Exit codes of Main.
const (
	ExitOK    = 0 // stopped on request
	ExitError = 1 // could not start, or serving failed
)

// Main is Serve for a plugin's main function: it exits the process with
// ExitOK after a requested stop and ExitError, after logging why, otherwise.
func Main(cfg Config) {
	err := Serve(cfg)
	if err == nil {
		os.Exit(ExitOK)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = NewLogger(cfg.Name)
	}
	logger.Error("plugin failed", "error", err)
	os.Exit(ExitError)
}
