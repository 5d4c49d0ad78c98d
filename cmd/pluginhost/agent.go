package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/examples"
	"github.com/pluginhost/pluginhost/host"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/webui"
	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// AgentCommand runs the agent.
type AgentCommand struct {
	*Meta
}

func (c *AgentCommand) Synopsis() string { return "Run the pluginhost agent" }

func (c *AgentCommand) Help() string {
	return helpText(`
Usage: pluginhost agent [-config FILE | -dev]

  Run the agent in the foreground. It serves the HTTP API, runs the job
  files listed in its configuration, and re-attaches to the plugins a
  previous run left behind (also after kill -9). SIGINT or SIGTERM stop
  the agent; plugins keep running and are adopted by the next agent.
  'pluginhost job stop' stops a job's tasks.

  Without addr in its config the agent listens on the default address,
  where the CLI and the Go client look: $XDG_RUNTIME_DIR/pluginhost/api.sock
  (root: /run/pluginhost/api.sock; without XDG_RUNTIME_DIR:
  /tmp/pluginhost-<uid>/api.sock). A second agent of the same user must
  set addr; without it, it refuses to start.

  On a loopback TCP addr every API request needs a token (X-Nomad-Token);
  the agent generates one at its first start and leaves it, 0600, for the
  user it runs as in ~/.config/pluginhost/tokens/<addr>, so that user's
  CLI needs no flag. 'pluginhost operator token' shows and rotates the
  tokens. The unix socket needs none: its file mode is the authentication.
  An agent on TCP also serves the API on <data_dir>/api.sock (0600), which
  keeps answering its user when other users fill the TCP port.

Options:

  -config=<file>
    The agent configuration file (HCL). Required unless -dev.

  -dev
    Run with a temporary data dir and debug logging, listening on the
    default address, with the demo job (mockcsi) running. On exit a
    dev agent stops its jobs and deletes its data dir.
`)
}

func (c *AgentCommand) Run(args []string) int {
	var cfgPath string
	var dev bool
	fs := c.flagSet("agent", false, false)
	fs.StringVar(&cfgPath, "config", "", "")
	fs.BoolVar(&dev, "dev", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("agent", "This command takes no arguments")
	}
	if cfgPath == "" && !dev {
		return c.usageError("agent", "Either -config FILE or -dev is required")
	}
	if cfgPath != "" && dev {
		return c.usageError("agent", "-config and -dev exclude each other")
	}
	return runAgent(c.Ctx, cfgPath, dev, c.Ui)
}

// runAgent builds the agent from its configuration, serves the API and
// blocks until ctx ends; it returns the process exit code.
func runAgent(ctx context.Context, cfgPath string, dev bool, ui cli.Ui) int {
	// Descriptors the agent inherited (a shell's 7</, a supervisor's
	// pipes) must not reach its tasks, its log shippers or its mount
	// helpers: Go passes on every descriptor not marked close-on-exec,
	// and marks only the ones it opens itself. runc closes everything
	// above 2 before it execs a container for the same reason.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		ui.Error(fmt.Sprintf("mark inherited descriptors close-on-exec: %v", err))
		return 1
	}
	var cfg *config.Config
	if dev {
		dir, err := devConfig()
		if err != nil {
			ui.Error(err.Error())
			return 1
		}
		defer func() {
			if err := mountinfo.DetachUnder(dir.DataDir); err != nil {
				ui.Warn(err.Error())
			}
			os.RemoveAll(dir.DataDir)
		}()
		cfg = dir
	} else {
		var err error
		cfg, err = config.ParseFile(cfgPath)
		if err != nil {
			ui.Error(err.Error())
			return 1
		}
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "pluginhost",
		Level:      hclog.LevelFromString(cfg.LogLevel),
		JSONFormat: cfg.LogJSON,
		Output:     os.Stderr,
	})
	// Go's runtime raised the soft RLIMIT_NOFILE to the hard limit (less
	// one) before main, for the API's connections and the tasks' pipes,
	// and restores the limit the agent was started with in every process
	// it starts: a task gets what it was given, not the agent's. A
	// setrlimit(RLIMIT_NOFILE) of the agent's own would end that
	// restoring (TestAgentRaisesNofileTasksKeepTheirs), so there is none.
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err == nil {
		logger.Info("open files limit", "soft", nofile.Cur, "hard", nofile.Max)
	}
	addr, isDefault, err := listenAddr(cfg)
	if err != nil {
		ui.Error(err.Error())
		return 1
	}
	// A second agent of this user would take the first one's default
	// address: say so before opening the data dir, which then stays
	// untouched. NewServer checks again, under the socket's lock.
	if isDefault {
		if err := apiserver.CheckAddrFree(addr); err != nil {
			ui.Error(defaultAddrInUse(addr, cfg, err))
			return 1
		}
	}
	exe, err := os.Executable()
	if err != nil {
		ui.Error(fmt.Sprintf("pluginhost: finding own binary for the log shipper: %v", err))
		return 1
	}
	agent, err := host.NewAgent(cfg, host.Options{
		Logger:        logger,
		LogmonCommand: logmonCommand(exe),
		NsexecCommand: nsexecCommand(exe),
	})
	if err != nil {
		ui.Error(err.Error())
		return 1
	}
	// The tokens exist from the first start on, also for an agent on a
	// unix socket, so that moving it to TCP later changes no secret.
	tokens, err := apiserver.OpenTokens(apiserver.TokensConfig{
		Path:       filepath.Join(cfg.DataDir, apiserver.TokenFileName),
		Management: cfg.ACL.ManagementToken, Read: cfg.ACL.ReadToken,
	})
	if err != nil {
		agent.Close()
		ui.Error(err.Error())
		return 1
	}
	srvCfg := apiserver.ServerConfig{
		Addr: addr, Backend: agent, Logger: logger,
		Metrics: agent.Metrics(), EnableDebug: cfg.EnableDebug, Tokens: tokens,
		UI: webui.Handler(),
	}
	srv, err := apiserver.NewServer(srvCfg)
	if err != nil {
		agent.Close()
		if isDefault && errors.Is(err, apiserver.ErrAddrInUse) {
			ui.Error(defaultAddrInUse(addr, cfg, err))
		} else {
			ui.Error(err.Error())
		}
		return 1
	}
	local, err := localServer(cfg, srv.Addr(), srvCfg, logger)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		agent.Close()
		ui.Error(err.Error())
		return 1
	}
	if local != nil {
		// Also on the paths where agent.Run never serves: the socket
		// file goes with the listener. Shutdown runs once.
		defer func() { _ = local.Shutdown(context.Background()) }()
	}
	agent.SetAddr(srv.Addr())
	tokenFile, err := publishToken(tokens, srv.Addr())
	if err != nil {
		// The API works without it; the user passes -token instead.
		logger.Warn("cannot leave the management token for this user's CLI", "error", err)
	}
	if tokenFile != "" {
		defer func() {
			if err := tokens.Unpublish(); err != nil {
				logger.Warn("cannot remove the per-user token file", "error", err)
			}
		}()
	}
	ui.Output(fmt.Sprintf("==> pluginhost agent started. Data dir: %s", cfg.DataDir))
	if isDefault {
		ui.Output(fmt.Sprintf("    API: %s (the default address: this user's CLI needs no %s)", srv.Addr(), api.EnvAddr))
	} else {
		ui.Output(fmt.Sprintf("    API: export %s=%s", api.EnvAddr, srv.Addr()))
	}
	if tokenFile != "" {
		ui.Output(fmt.Sprintf("    Token: this user's CLI reads it from %s; others need -token or %s (pluginhost operator token)", tokenFile, api.EnvToken))
	}
	if local != nil {
		ui.Output(fmt.Sprintf("    Local socket: %s (no token; it answers while TCP is busy: -address %s)", local.Addr(), local.Addr()))
	}
	if self, err := agent.Self(ctx); err == nil && self.Containment != nil {
		ui.Output("    Containment: " + containmentLine(self.Containment))
	}
	if err := agent.Run(ctx, serveAll(srv, local)); err != nil {
		ui.Error(err.Error())
		return 1
	}
	return 0
}

// publishToken leaves the management token, 0600, where the CLI and the Go
// client of the user the agent runs as look for it, when the API is on TCP
// (the unix socket needs none). It returns the file, "" for none.
func publishToken(tokens *apiserver.Tokens, addr string) (string, error) {
	a, err := api.ParseAddr(addr)
	if err != nil || a.Network != "tcp" {
		return "", err
	}
	path, err := api.UserTokenPath(addr)
	if err != nil {
		return "", err
	}
	if err := tokens.Publish(path); err != nil {
		return "", err
	}
	return path, nil
}

// localSocketName is the unix socket in data_dir that an agent on TCP
// serves too.
const localSocketName = "api.sock"

// localServer is the API on <data_dir>/api.sock beside a TCP address, nil
// for an agent on a unix socket. Every local user can open connections to
// the TCP port, and enough of them would fill its connection cap: the
// socket, 0600 in the agent's data dir, is reachable only by the agent's
// user and root (who can read the tokens in that dir anyway) and has a cap
// of its own, so the operator's CLI gets in whatever happens on TCP. A
// data dir too long for a socket path only loses that, with a warning.
func localServer(cfg *config.Config, mainAddr string, base apiserver.ServerConfig, logger hclog.Logger) (*apiserver.Server, error) {
	if a, err := api.ParseAddr(mainAddr); err != nil || a.Network != "tcp" {
		return nil, err
	}
	path := filepath.Join(cfg.DataDir, localSocketName)
	if _, err := api.ParseAddr("unix://" + path); err != nil {
		logger.Warn("no local API socket beside TCP: the data dir is too long for a socket path", "error", err)
		return nil, nil
	}
	base.Addr = "unix://" + path
	srv, err := apiserver.NewServer(base)
	if err != nil {
		return nil, fmt.Errorf("local API socket beside TCP: %w", err)
	}
	return srv, nil
}

// serveAll serves the API's listeners until ctx ends or one fails, which
// ends the others.
func serveAll(srv, local *apiserver.Server) func(context.Context) error {
	if local == nil {
		return srv.Serve
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 2)
		go func() { errc <- srv.Serve(ctx) }()
		go func() { errc <- local.Serve(ctx) }()
		err := <-errc
		cancel()
		return errors.Join(err, <-errc)
	}
}

// listenAddr is where the HTTP API listens, as api.ParseAddr reads it, and
// whether that is the default address (no addr in the config, or -dev).
func listenAddr(cfg *config.Config) (addr string, isDefault bool, err error) {
	network, address, err := cfg.APIListenAddr()
	if err != nil {
		return "", false, err
	}
	switch network {
	case "":
		p, err := api.PrepareDefaultSocketDir()
		if err != nil {
			return "", true, fmt.Errorf("api address: %w", err)
		}
		return "unix://" + p, true, nil
	case "unix":
		return "unix://" + address, false, nil
	}
	return address, false, nil
}

// defaultAddrInUse tells a second agent of the same user what to do.
func defaultAddrInUse(addr string, cfg *config.Config, err error) string {
	msg := fmt.Sprintf("pluginhost: another agent already listens on the default address %s (%v).\n", addr, err)
	if cfg.DevMode {
		// -dev has no config to put addr in.
		return msg + "A dev agent always takes the default address: stop the other agent, or run this one with -config and an addr of its own."
	}
	return msg + fmt.Sprintf("Give this agent an address of its own: set addr in its config, e.g. addr = %q, and reach it with -address or %s.",
		"unix://"+filepath.Join(cfg.DataDir, "api.sock"), api.EnvAddr)
}

// devConfig is -dev: a temporary data dir with the demo job in it.
func devConfig() (*config.Config, error) {
	cfg := config.Dev()
	dir, err := os.MkdirTemp("", "pluginhost-dev-")
	if err != nil {
		return nil, fmt.Errorf("pluginhost: dev data dir: %w", err)
	}
	cfg.DataDir = dir
	cfg.LogLevel = "debug"
	demo := filepath.Join(dir, "demo.hcl")
	if err := os.WriteFile(demo, examples.Demo, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pluginhost: writing the demo job: %w", err)
	}
	cfg.Jobs = []string{demo}
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pluginhost: %s", strings.TrimSpace(err.Error()))
	}
	return cfg, nil
}

// containmentLine says in one line how tasks are contained.
func containmentLine(c *api.Containment) string {
	if c.CgroupVersion == 0 {
		return "none, task resources are not enforced (" + c.Reason + ")"
	}
	return fmt.Sprintf("cgroup v%d under %s (%s)", c.CgroupVersion, c.CgroupParent, strings.Join(c.Controllers, ", "))
}
