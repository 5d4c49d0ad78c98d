package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/volumespec"
)

// VolumeCreateCommand creates (or expands) a volume from a specification.
type VolumeCreateCommand struct{ *Meta }

func (c *VolumeCreateCommand) Synopsis() string { return "Create a volume through its CSI plugin" }
func (c *VolumeCreateCommand) Help() string {
	return helpText(`
Usage: pluginhost volume create [-detach] FILE

  Create the volume FILE describes (HCL or JSON, as 'nomad volume create'
  takes) through its plugin's controller, then follow the work until the
  volume is ready or has failed. The agent records the request first: if
  it is killed meanwhile it finishes the work when it starts again, and a
  retried CreateVolume finds the volume the first attempt made. Creating an
  existing volume again with a larger capacity_min expands it.

Options:

  -detach
    Return once the request is recorded.
` + helpAgentOptions)
}

func (c *VolumeCreateCommand) Run(args []string) int {
	return c.Meta.submitVolume("volume create", volumespec.OpCreate, args, func(cl *api.Client, id, path string, src []byte) (*api.CSIVolumeRegisterResponse, error) {
		return cl.CreateVolumeSource(c.Ctx, id, path, src)
	})
}

// VolumeRegisterCommand registers an existing volume.
type VolumeRegisterCommand struct{ *Meta }

func (c *VolumeRegisterCommand) Synopsis() string { return "Register an existing volume" }
func (c *VolumeRegisterCommand) Help() string {
	return helpText(`
Usage: pluginhost volume register [-detach] FILE

  Register a volume that exists at its plugin (external_id names it). When
  the plugin has a controller, the agent checks the volume's capabilities
  with ValidateVolumeCapabilities first.

Options:

  -detach
    Return once the request is recorded.
` + helpAgentOptions)
}

func (c *VolumeRegisterCommand) Run(args []string) int {
	return c.Meta.submitVolume("volume register", volumespec.OpRegister, args, func(cl *api.Client, id, path string, src []byte) (*api.CSIVolumeRegisterResponse, error) {
		return cl.RegisterVolumeSource(c.Ctx, id, path, src)
	})
}

// submitVolume reads and checks a volume file locally (errors point at
// file:line:col without an agent), submits it, and follows the volume.
func (m *Meta) submitVolume(name string, op volumespec.Op, args []string,
	submit func(cl *api.Client, id, path string, src []byte) (*api.CSIVolumeRegisterResponse, error)) int {
	var detach bool
	fs := m.flagSet(name, true, false)
	fs.BoolVar(&detach, "detach", false, "")
	if !m.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return m.usageError(name, "This command takes one argument: the volume specification file")
	}
	path := fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error reading volume file: %v", err))
		return 1
	}
	spec, err := volumespec.ParseFor(src, path, op)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error in volume file: %v", err))
		return 1
	}
	return m.followRequest(detach, true, func(client *api.Client) (*api.CSIVolume, error) {
		resp, err := submit(client, spec.ID, path, src)
		if err != nil {
			return nil, &requestError{fmt.Sprintf("submitting volume %q", spec.ID), err}
		}
		v := resp.Volumes[0]
		m.Ui.Output(fmt.Sprintf("==> %s: Volume %q recorded (%s)", formatTime(m.now()), v.ID, v.StateDescription))
		return v, nil
	})
}

// followRequest connects, subscribes to volume events (first, so that no
// change of the volume slips between the answer and the subscription),
// makes the request and, unless detach, follows the volume until it is
// ready (present) or gone (!present).
func (m *Meta) followRequest(detach, present bool, request func(*api.Client) (*api.CSIVolume, error)) int {
	client, err := m.client()
	if err != nil {
		return m.fail("connecting to the agent", err)
	}
	defer client.Close()
	var stream *api.EventStream
	if !detach {
		if stream, err = client.Events(m.Ctx, api.TopicVolume); err != nil {
			return m.fail("subscribing to events", err)
		}
		defer stream.Close()
	}
	v, err := request(client)
	if re := (*requestError)(nil); errors.As(err, &re) {
		return m.fail(re.doing, re.err)
	}
	if err != nil {
		return m.fail("requesting", err)
	}
	if detach {
		return 0
	}
	return m.followVolume(client, stream, v, !present)
}

// requestError says what a request was doing when it failed, for fail.
type requestError struct {
	doing string
	err   error
}

func (e *requestError) Error() string { return e.doing + ": " + e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// followVolume prints a volume's progress until it is ready or failed, or
// with gone until it is forgotten. Exit code 0 on success, 1 on failure.
func (m *Meta) followVolume(client *api.Client, stream *api.EventStream, v *api.CSIVolume, gone bool) int {
	last := ""
	report := func(v *api.CSIVolume) (int, bool) {
		line := fmt.Sprintf("%s: %s", v.State, v.StateDescription)
		if v.LastError != "" && v.State != api.VolumeStateReady {
			line += fmt.Sprintf(" (attempt %d: %s)", v.Attempts, v.LastError)
		}
		if line != last {
			m.Ui.Output(fmt.Sprintf("    %s: %s", formatTime(m.now()), line))
			last = line
		}
		switch {
		case v.State == api.VolumeStateFailed:
			m.Ui.Error(fmt.Sprintf("Volume %q failed: %s", v.ID, v.LastError))
			return 1, true
		case !gone && v.State == api.VolumeStateReady:
			m.Ui.Output(fmt.Sprintf("==> %s: Volume %q is ready (external ID %s, %s)", formatTime(m.now()), v.ID,
				v.ExternalID, volumespec.FormatBytes(v.Capacity)))
			return 0, true
		}
		return 0, false
	}
	// The answer may already be the end (a volume that exists).
	if cur, err := client.Volume(m.Ctx, v.ID); err == nil {
		if code, done := report(cur); done {
			return code
		}
	} else if gone && errors.Is(err, api.ErrNotFound) {
		m.Ui.Output(fmt.Sprintf("==> %s: Volume %q is gone", formatTime(m.now()), v.ID))
		return 0
	}
	for {
		ev, err := stream.Next(m.Ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				m.Ui.Error("Interrupted; the agent carries on with the volume's work (see 'volume status').")
				return 1
			}
			return m.fail("following the volume", err)
		}
		if ev.Key != v.ID || ev.Payload.Volume == nil {
			continue
		}
		if ev.Type == "VolumeDeleted" {
			if gone {
				m.Ui.Output(fmt.Sprintf("==> %s: Volume %q is gone", formatTime(m.now()), v.ID))
				return 0
			}
			m.Ui.Error(fmt.Sprintf("Volume %q was forgotten meanwhile", v.ID))
			return 1
		}
		if code, done := report(ev.Payload.Volume); done {
			return code
		}
	}
}
