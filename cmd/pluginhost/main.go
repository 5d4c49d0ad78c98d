// Command pluginhost is the agent and its CLI.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/host/logmon"
	"github.com/pluginhost/pluginhost/host/nsexec"
)

// version is the release, stamped at link time with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	// The log shipper outlives the agent and owns its signal handling:
	// hand it the process before main installs handlers it would inherit.
	if len(os.Args) > 1 && os.Args[1] == "logmon" {
		os.Exit(logmon.Main(os.Args[2:]))
	}
	// The mount helper execs the task in place: nothing of the CLI may run
	// first.
	if len(os.Args) > 1 && os.Args[1] == "nsexec" {
		os.Exit(nsexec.Main(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handlers so that a
	// second Ctrl-C kills a command that is slow to wind down. The
	// goroutine ends with ctx, which stop() below also ends.
	go func() {
		<-ctx.Done()
		stop()
	}()
	ui := &cli.BasicUi{Reader: os.Stdin, Writer: os.Stdout, ErrorWriter: os.Stderr}
	code := run(ctx, os.Args[1:], ui, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it in-process with their own
// Ui, writers and environment.
func run(ctx context.Context, args []string, ui cli.Ui, stdout, stderr io.Writer, getenv func(string) string) int {
	return runClock(ctx, args, ui, stdout, stderr, getenv, time.Now)
}

// runClock is run with a clock, for views that print relative times.
func runClock(ctx context.Context, args []string, ui cli.Ui, stdout, stderr io.Writer, getenv func(string) string, now func() time.Time) int {
	m := &Meta{Ctx: ctx, Ui: textUi{ui}, Out: stdout, Getenv: getenv, Now: now}
	cmds := m.withCompletion(commands(m))
	if unknown := unknownCommand(cmds, args); unknown != "" {
		// The help alone would leave the user to guess what went wrong.
		ui.Error(fmt.Sprintf("unknown command %q", unknown))
	}
	c := &cli.CLI{
		Name:           "pluginhost",
		Version:        version,
		Args:           args,
		Commands:       cmds,
		HiddenCommands: []string{"logmon"},
		HelpFunc:       cli.BasicHelpFunc("pluginhost"),
		HelpWriter:     stdout,
		ErrorWriter:    stderr,
		// -autocomplete-install / -autocomplete-uninstall, as Nomad has.
		Autocomplete: true,
	}
	code, err := c.Run()
	if err != nil {
		ui.Error("Error: " + err.Error())
		return 1
	}
	return code
}

// unknownCommand returns the command words args name that no command
// answers to ("" if they name one, or none): "foo", or "job foo" under a
// command that has subcommands.
func unknownCommand(cmds map[string]cli.CommandFactory, args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	if len(words) == 0 {
		return ""
	}
	if _, ok := cmds[words[0]]; !ok {
		return words[0]
	}
	for n := 2; n <= len(words); n++ {
		prefix := strings.Join(words[:n-1], " ")
		if _, ok := cmds[strings.Join(words[:n], " ")]; ok {
			continue
		}
		// Only a command with subcommands can be followed by an unknown
		// one; other commands take arguments.
		for k := range cmds {
			if strings.HasPrefix(k, prefix+" ") {
				return strings.Join(words[:n], " ")
			}
		}
		return ""
	}
	return ""
}

// commands is the command table; every command shares m.
func commands(m *Meta) map[string]cli.CommandFactory {
	return map[string]cli.CommandFactory{
		"agent":                  func() (cli.Command, error) { return &AgentCommand{Meta: m}, nil },
		"job":                    func() (cli.Command, error) { return &JobCommand{Meta: m}, nil },
		"job run":                func() (cli.Command, error) { return &JobRunCommand{Meta: m}, nil },
		"job stop":               func() (cli.Command, error) { return &JobStopCommand{Meta: m}, nil },
		"job status":             func() (cli.Command, error) { return &JobStatusCommand{Meta: m}, nil },
		"job history":            func() (cli.Command, error) { return &JobHistoryCommand{Meta: m}, nil },
		"job revert":             func() (cli.Command, error) { return &JobRevertCommand{JobRunCommand: &JobRunCommand{Meta: m}}, nil },
		"volume":                 func() (cli.Command, error) { return &VolumeCommand{Meta: m}, nil },
		"volume init":            func() (cli.Command, error) { return &VolumeInitCommand{Meta: m}, nil },
		"volume create":          func() (cli.Command, error) { return &VolumeCreateCommand{Meta: m}, nil },
		"volume register":        func() (cli.Command, error) { return &VolumeRegisterCommand{Meta: m}, nil },
		"volume deregister":      func() (cli.Command, error) { return &VolumeDeregisterCommand{Meta: m}, nil },
		"volume detach":          func() (cli.Command, error) { return &VolumeDetachCommand{Meta: m}, nil },
		"volume delete":          func() (cli.Command, error) { return &VolumeDeleteCommand{Meta: m}, nil },
		"volume status":          func() (cli.Command, error) { return &VolumeStatusCommand{Meta: m}, nil },
		"volume snapshot":        func() (cli.Command, error) { return &VolumeSnapshotCommand{Meta: m}, nil },
		"volume snapshot create": func() (cli.Command, error) { return &VolumeSnapshotCreateCommand{Meta: m}, nil },
		"volume snapshot list":   func() (cli.Command, error) { return &VolumeSnapshotListCommand{Meta: m}, nil },
		"volume snapshot delete": func() (cli.Command, error) { return &VolumeSnapshotDeleteCommand{Meta: m}, nil },
		"job validate":           func() (cli.Command, error) { return &JobValidateCommand{Meta: m}, nil },
		"alloc":                  func() (cli.Command, error) { return &AllocCommand{Meta: m}, nil },
		"alloc status":           func() (cli.Command, error) { return &AllocStatusCommand{Meta: m}, nil },
		"alloc logs":             func() (cli.Command, error) { return &AllocLogsCommand{Meta: m}, nil },
		"plugin":                 func() (cli.Command, error) { return &PluginCommand{Meta: m}, nil },
		"plugin status":          func() (cli.Command, error) { return &PluginStatusCommand{Meta: m}, nil },
		"plugin init":            func() (cli.Command, error) { return &PluginInitCommand{Meta: m}, nil },
		"events":                 func() (cli.Command, error) { return &EventsCommand{Meta: m}, nil },
		"operator":               func() (cli.Command, error) { return &OperatorCommand{Meta: m}, nil },
		"operator metrics":       func() (cli.Command, error) { return &OperatorMetricsCommand{Meta: m}, nil },
		"operator token":         func() (cli.Command, error) { return &OperatorTokenCommand{Meta: m}, nil },
		"ui":                     func() (cli.Command, error) { return &UICommand{Meta: m}, nil },
		"logmon":                 func() (cli.Command, error) { return &LogmonCommand{Meta: m}, nil },
		"version":                func() (cli.Command, error) { return &VersionCommand{Meta: m}, nil },
	}
}
