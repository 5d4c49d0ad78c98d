package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// UICommand opens the agent's web UI in a browser, as `nomad ui` does.
type UICommand struct {
	*Meta
}

func (c *UICommand) Synopsis() string { return "Open the agent's web UI in a browser" }

func (c *UICommand) Help() string {
	return helpText(`
Usage: pluginhost ui [-show-url] [-authenticate=BOOL] [JOB | ALLOC]

  Open the agent's web UI in the browser, at a job's or an allocation's
  page when one is named (an allocation may be a unique prefix).

  A browser cannot reach a unix socket: an agent on one (the default
  address) opens a loopback port for the UI the first time it is asked,
  where every request needs a token, like an agent's own TCP address. The
  browser gets a token through a one-time token in the URL's fragment,
  which it exchanges once, within a minute, for the management token and
  keeps in the tab's session storage.

Options:

  -show-url
    Print the URL instead of opening a browser.

  -authenticate
    Sign the browser in with a one-time token. On by default when this
    command reaches the agent through its unix socket (whoever can open
    the socket may do everything anyway); on TCP it needs the management
    token, as nomad ui -authenticate does. -authenticate=false opens the
    sign-in page instead.
` + helpAgentOptions)
}

func (c *UICommand) Run(args []string) int {
	var showURL bool
	var authenticate string
	fs := c.flagSet("ui", false, false)
	fs.BoolVar(&showURL, "show-url", false, "")
	fs.StringVar(&authenticate, "authenticate", "", "")
	// -authenticate alone means true, as a bool flag would.
	for i, a := range args {
		if a == "-authenticate" || a == "--authenticate" {
			args[i] = a + "=true"
		}
	}
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() > 1 {
		return c.usageError("ui", "This command takes at most one argument: a job ID or an allocation ID")
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(c.Ctx, 30*time.Second)
	defer cancel()
	l, err := client.UIListener(ctx)
	if err != nil {
		return c.fail("asking the agent for its UI", err)
	}
	page := l.URL
	if fs.NArg() == 1 {
		p, err := c.pageOf(ctx, client, fs.Arg(0))
		if err != nil {
			return c.fail(fmt.Sprintf("finding %q", fs.Arg(0)), err)
		}
		page = strings.TrimSuffix(l.URL, "/ui/") + p
	}
	auth := authenticate == "true"
	if authenticate == "" {
		a, err := api.ParseAddr(client.Addr())
		auth = err == nil && a.Network == "unix"
	} else if authenticate != "true" && authenticate != "false" {
		return c.usageError("ui", "-authenticate takes true or false, got "+authenticate)
	}
	if auth {
		ott, err := client.CreateOneTimeToken(ctx)
		if err != nil {
			return c.fail("making a one-time token", err)
		}
		page += "#ott=" + url.QueryEscape(ott.OneTimeSecretID)
	}
	if showURL {
		c.Ui.Output(page)
		if auth {
			c.Ui.Warn("The URL signs in one browser once, within a minute; it is worth nothing after.")
		}
		return 0
	}
	if err := openBrowser(page); err != nil {
		c.Ui.Warn(fmt.Sprintf("Could not open a browser (%v); open this URL yourself:", err))
		c.Ui.Output(page)
		return 0
	}
	c.Ui.Output("Opening " + strings.SplitN(page, "#", 2)[0])
	return 0
}

// pageOf is the UI page of a job or an allocation named by id.
func (c *UICommand) pageOf(ctx context.Context, client *api.Client, id string) (string, error) {
	if _, err := client.Job(ctx, id); err == nil {
		return "/ui/jobs/" + url.PathEscape(id), nil
	} else if !errors.Is(err, api.ErrNotFound) {
		return "", err
	}
	a, err := client.Allocation(ctx, id)
	if err != nil {
		if errors.Is(err, api.ErrNotFound) {
			return "", fmt.Errorf("no job or allocation %q: %w", id, err)
		}
		return "", err
	}
	return "/ui/allocations/" + url.PathEscape(a.ID), nil
}

// openBrowser hands url to the user's browser: $BROWSER, else the
// system's opener.
func openBrowser(u string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		return exec.Command(b, u).Start()
	}
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", u).Start()
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u).Start()
	}
	if _, err := exec.LookPath("xdg-open"); err != nil {
		return errors.New("no $BROWSER and no xdg-open")
	}
	return exec.Command("xdg-open", u).Start()
}
