package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Client talks to an agent's API; one method per endpoint. It is safe for
// concurrent use.
type Client struct {
	addr Addr
	base string
	http *http.Client
	// token is the one WithToken gave; "" means the per-user token files
	// (tokenFiles) on TCP, and none on a unix socket.
	token      string
	tokenFiles []string
}

// ClientOption configures NewClient.
type ClientOption func(*Client)

// WithToken makes the client send secret as its token (X-Nomad-Token), as
// the CLI's -token and PLUGINHOST_TOKEN do. "" changes nothing.
func WithToken(secret string) ClientOption {
	return func(c *Client) { c.token = strings.TrimSpace(secret) }
}

// NewClient returns a client for addr (see ParseAddr); "" is DefaultAddr,
// where an agent without addr listens. On TCP, without
// WithToken, it sends the management token an agent listening on addr left
// for its own user (UserTokenPaths), read anew for every request so that a
// rotation is followed; on a unix socket no token is needed.
func NewClient(addr string, opts ...ClientOption) (*Client, error) {
	defaulted := strings.TrimSpace(addr) == ""
	if defaulted {
		var err error
		if addr, err = DefaultAddr(); err != nil {
			return nil, fmt.Errorf("api client: %w", err)
		}
	}
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("api client: %w", err)
	}
	// A program that keeps many requests in flight reuses its
	// connections: with fewer idle ones kept than requests in flight,
	// every burst closes and redials the difference (a quarter of
	// BenchmarkVolumes100's requests dialled with 4 at 16 in flight).
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	base := "http://" + a.Address
	if a.Network == "unix" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			// Nobody chose the default address, so make sure the agent
			// behind it is one of this user's: in /tmp anyone could
			// have made the directory first. A stat per dial, ~1 µs.
			if defaulted {
				if err := checkPrivateDir(filepath.Dir(a.Address), os.Geteuid()); err != nil {
					return nil, err
				}
			}
			return d.DialContext(ctx, "unix", a.Address)
		}
		// The host part is ignored by the dialer; it only has to be valid.
		base = "http://pluginhost"
	}
	// No client-wide timeout: event and log streams last as long as their
	// context, and every call takes one.
	c := &Client{addr: a, base: base, http: &http.Client{Transport: tr}}
	for _, o := range opts {
		o(c)
	}
	if a.Network == "tcp" && c.token == "" {
		// No home directory (a bare service environment) only means no
		// default token: the agent answers 401 and says what to set.
		c.tokenFiles, _ = UserTokenPaths(a.String())
	}
	return c, nil
}

// TokenFiles returns the per-user token files the client reads its token
// from: none with WithToken or on a unix socket.
func (c *Client) TokenFiles() []string { return slices.Clone(c.tokenFiles) }

// secret is the token to send: WithToken's, else the first per-user token
// file that exists, else none.
func (c *Client) secret() string {
	if c.token != "" {
		return c.token
	}
	for _, p := range c.tokenFiles {
		if s, err := readTokenSecret(p); err == nil && s != "" {
			return s
		}
	}
	return ""
}

// Tokens returns the agent's tokens, secrets included (management only).
func (c *Client) Tokens(ctx context.Context) (*ACLTokens, error) {
	var out ACLTokens
	if err := c.do(ctx, http.MethodGet, "/v1/acl/tokens", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RotateToken replaces the agent's token of type typ ("management" or
// "read") and returns the new set. The old token stops working at once; a
// client that used the management token it replaced needs the new one
// (a client that reads the per-user file picks it up by itself).
func (c *Client) RotateToken(ctx context.Context, typ string) (*ACLTokens, error) {
	var out ACLTokens
	if err := c.do(ctx, http.MethodPost, "/v1/acl/tokens/rotate", nil, &ACLTokenRotateRequest{Type: typ}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateOneTimeToken asks for a one-time token of this client's role
// (management on the unix socket), for a browser to exchange.
func (c *Client) CreateOneTimeToken(ctx context.Context) (*OneTimeToken, error) {
	var out OneTimeToken
	if err := c.do(ctx, http.MethodPost, "/v1/acl/token/onetime", nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExchangeOneTimeToken exchanges a one-time token for the token it stands
// for; it works once. It needs no token of its own.
func (c *Client) ExchangeOneTimeToken(ctx context.Context, secret string) (*ACLToken, error) {
	var out OneTimeTokenExchangeResponse
	if err := c.do(ctx, http.MethodPost, "/v1/acl/token/onetime/exchange", nil, &OneTimeTokenExchangeRequest{OneTimeSecretID: secret}, &out); err != nil {
		return nil, err
	}
	return out.Token, nil
}

// UIListener returns the URL of the agent's web UI, opening a loopback
// listener for it on an agent that has none (management only).
func (c *Client) UIListener(ctx context.Context) (*UIListener, error) {
	var out UIListener
	if err := c.do(ctx, http.MethodPost, "/v1/agent/ui", nil, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Addr returns the address the client talks to.
func (c *Client) Addr() string { return c.addr.String() }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// StatusError is a non-2xx answer.
type StatusError struct {
	StatusCode int
	ErrorResponse
}

func (e *StatusError) Error() string {
	msg := e.ErrorResponse.Error
	if e.Field != "" && !strings.Contains(msg, e.Field) {
		msg = e.Field + ": " + msg
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.StatusCode)
}

// Is makes errors.Is(err, ErrNotFound) work on the client side too.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound ||
		target == ErrUnavailable && e.StatusCode == http.StatusServiceUnavailable
}

// Jobs lists the jobs.
func (c *Client) Jobs(ctx context.Context) ([]*JobListStub, error) {
	var out []*JobListStub
	return out, c.do(ctx, http.MethodGet, "/v1/jobs", nil, nil, &out)
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (*Job, error) {
	var out Job
	if err := c.do(ctx, http.MethodGet, "/v1/job/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RegisterJobSource submits a job file's text; the agent parses it, so parse
// errors come back as a *StatusError with Diagnostics.
func (c *Client) RegisterJobSource(ctx context.Context, filename string, src []byte) (*JobRegisterResponse, error) {
	return c.register(ctx, &JobRegisterRequest{Source: string(src), Filename: filename})
}

// RegisterJob submits a parsed job: a *jobspec.Job of package
// github.com/pluginhost/pluginhost/host/jobspec, or any value with the same
// JSON (see JobRegisterRequest.Job).
func (c *Client) RegisterJob(ctx context.Context, job any) (*JobRegisterResponse, error) {
	return c.register(ctx, &JobRegisterRequest{Job: job})
}

func (c *Client) register(ctx context.Context, req *JobRegisterRequest) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	if err := c.do(ctx, http.MethodPost, "/v1/jobs", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StopJob stops a job; purge also forgets it.
func (c *Client) StopJob(ctx context.Context, id string, purge bool) error {
	q := url.Values{}
	if purge {
		q.Set("purge", "true")
	}
	return c.do(ctx, http.MethodDelete, "/v1/job/"+url.PathEscape(id), q, nil, nil)
}

// JobVersions lists a job's kept versions, newest first.
func (c *Client) JobVersions(ctx context.Context, id string) ([]*Job, error) {
	var out JobVersionsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/job/"+url.PathEscape(id)+"/versions", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Versions, nil
}

// RevertJob makes an earlier version of a job its next version.
func (c *Client) RevertJob(ctx context.Context, id string, version uint64) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	req := &JobRevertRequest{JobID: id, JobVersion: version}
	if err := c.do(ctx, http.MethodPost, "/v1/job/"+url.PathEscape(id)+"/revert", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobAllocations lists a job's allocations.
func (c *Client) JobAllocations(ctx context.Context, jobID string) ([]*AllocListStub, error) {
	var out []*AllocListStub
	return out, c.do(ctx, http.MethodGet, "/v1/job/"+url.PathEscape(jobID)+"/allocations", nil, nil, &out)
}

// Allocation returns one allocation; id may be a unique prefix.
func (c *Client) Allocation(ctx context.Context, id string) (*Allocation, error) {
	var out Allocation
	if err := c.do(ctx, http.MethodGet, "/v1/allocation/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TrailerError is the HTTP trailer that carries an error which happened after
// a log stream had started, when the status code was already sent. Clients
// must check it, or a truncated log would look complete.
const TrailerError = "X-Pluginhost-Error"

// AllocLogs copies a task's logs to w. task may be empty for a one-task
// allocation. With follow it returns when ctx is done (returning nil) or the
// agent ends the stream. An error the agent hit mid-stream is returned too.
func (c *Client) AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error {
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	if stderr {
		q.Set("type", "stderr")
	} else {
		q.Set("type", "stdout")
	}
	if follow {
		q.Set("follow", "true")
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/client/fs/logs/"+url.PathEscape(allocID), q, nil)
	if err != nil {
		if follow && ctx.Err() != nil {
			// Interrupting a follow is how it ends, even before the
			// first byte arrived.
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("read logs of %s: %w", allocID, err)
	}
	if msg := resp.Trailer.Get(TrailerError); msg != "" {
		return fmt.Errorf("logs of %s ended early: %s", allocID, msg)
	}
	return nil
}

// Plugins lists the CSI plugins.
func (c *Client) Plugins(ctx context.Context) ([]*CSIPluginListStub, error) {
	var out []*CSIPluginListStub
	return out, c.do(ctx, http.MethodGet, "/v1/plugins", url.Values{"type": {"csi"}}, nil, &out)
}

// Plugin returns one CSI plugin.
func (c *Client) Plugin(ctx context.Context, id string) (*CSIPlugin, error) {
	var out CSIPlugin
	if err := c.do(ctx, http.MethodGet, "/v1/plugin/csi/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllPlugins lists the plugins of every type (CSI plugins once each, as
// Plugins has them, with Type "csi"), or of pluginType when it is not "".
func (c *Client) AllPlugins(ctx context.Context, pluginType string) ([]*PluginStatusListStub, error) {
	var q url.Values
	if pluginType != "" {
		q = url.Values{"type": {pluginType}}
	}
	var out []*PluginStatusListStub
	return out, c.do(ctx, http.MethodGet, "/v1/plugins", q, nil, &out)
}

// RegisteredPlugins lists the registry's plugins of pluginType, or of
// every type when it is "" (with the plugins of other types than CSI's
// that allocations declare but have not registered).
func (c *Client) RegisteredPlugins(ctx context.Context, pluginType string) ([]*PluginListStub, error) {
	var q url.Values
	if pluginType != "" {
		q = url.Values{"type": {pluginType}}
	}
	var out []*PluginListStub
	err := c.do(ctx, http.MethodGet, "/v1/registry/plugins", q, nil, &out)
	return out, err
}

// RegisteredPlugin describes one plugin of any type, registered or
// declared: its registered instances and the declaring allocations still
// waiting to register.
func (c *Client) RegisteredPlugin(ctx context.Context, pluginType, name string) (*Plugin, error) {
	var out Plugin
	if err := c.do(ctx, http.MethodGet, "/v1/plugin/"+url.PathEscape(pluginType)+"/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Self describes the agent.
func (c *Client) Self(ctx context.Context) (*AgentSelf, error) {
	var out AgentSelf
	if err := c.do(ctx, http.MethodGet, "/v1/agent/self", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Metrics returns the agent's metrics in their JSON form.
func (c *Client) Metrics(ctx context.Context) (*MetricsSummary, error) {
	var out MetricsSummary
	if err := c.do(ctx, http.MethodGet, "/v1/metrics", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MetricsPrometheus copies the agent's metrics in the Prometheus text
// format to w.
func (c *Client) MetricsPrometheus(ctx context.Context, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/metrics", url.Values{"format": {"prometheus"}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("GET /v1/metrics: %w", err)
	}
	return nil
}

// Health reports whether the agent is ready. A reachable agent that is not
// ready yet is (false, nil).
func (c *Client) Health(ctx context.Context) (bool, error) {
	var out AgentHealth
	err := c.do(ctx, http.MethodGet, "/v1/agent/health", nil, nil, &out)
	var se *StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusServiceUnavailable {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return out.Ready, nil
}

// EventStream is a live subscription; read it with Next from one goroutine.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// maxEventBytes bounds one event line; events are small, but a plugin's
// health description is free text.
const maxEventBytes = 4 << 20

// Events subscribes to the event stream, optionally filtered to topics. When
// it returns, the subscription is live on the agent: every later event will
// be delivered. The stream ends when ctx is done or Close is called.
func (c *Client) Events(ctx context.Context, topics ...string) (*EventStream, error) {
	return c.EventsFrom(ctx, 0, topics...)
}

// EventsFrom is Events starting with the kept events after index (0: only
// later ones), to resume a stream that was cut off.
func (c *Client) EventsFrom(ctx context.Context, index uint64, topics ...string) (*EventStream, error) {
	return c.events(ctx, index, index > 0, topics)
}

// EventsSince is Events starting with the kept events after index, where
// 0 means every kept event (the agent keeps the last 4096): with
// AgentSelf.EventIndex, the last N events and then the later ones.
func (c *Client) EventsSince(ctx context.Context, index uint64, topics ...string) (*EventStream, error) {
	return c.events(ctx, index, true, topics)
}

func (c *Client) events(ctx context.Context, index uint64, replay bool, topics []string) (*EventStream, error) {
	q := url.Values{}
	if replay {
		q.Set("index", strconv.FormatUint(index, 10))
	}
	for _, t := range topics {
		q.Add("topic", t)
	}
	resp, err := c.send(ctx, http.MethodGet, "/v1/event/stream", q, nil)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	return &EventStream{body: resp.Body, sc: sc}, nil
}

// Next blocks for the next event. It returns io.EOF when the agent ended the
// stream and the context's error when the subscriber's context ended.
// Heartbeats are skipped.
func (s *EventStream) Next(ctx context.Context) (*Event, error) {
	for s.sc.Scan() {
		line := bytes.TrimSpace(s.sc.Bytes())
		if len(line) == 0 || bytes.Equal(line, []byte("{}")) {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("decode event: %w", err)
		}
		return &ev, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.sc.Err(); err != nil {
		return nil, fmt.Errorf("read event stream: %w", err)
	}
	return nil, io.EOF
}

// Close ends the subscription.
func (s *EventStream) Close() error { return s.body.Close() }

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	resp, err := c.send(ctx, method, path, q, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// send performs a request and turns non-2xx answers into *StatusError; on
// success the caller owns resp.Body.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok := c.secret(); tok != "" {
		req.Header.Set(HeaderToken, tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error repeats method and URL, and the URL's host is a
		// placeholder for unix sockets: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s at %s: %w", method, path, c.addr, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	se := &StatusError{StatusCode: resp.StatusCode}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(raw, &se.ErrorResponse); err != nil || se.ErrorResponse.Error == "" {
		se.ErrorResponse.Error = strings.TrimSpace(string(raw))
		if se.ErrorResponse.Error == "" {
			se.ErrorResponse.Error = resp.Status
		}
	}
	return nil, se
}

// CreateVolumeSource submits a volume specification file's text for
// creation; the agent parses it.
func (c *Client) CreateVolumeSource(ctx context.Context, id, filename string, src []byte) (*CSIVolumeRegisterResponse, error) {
	var out CSIVolumeRegisterResponse
	req := &CSIVolumeRegisterRequest{Source: string(src), Filename: filename}
	return &out, c.do(ctx, http.MethodPut, "/v1/volume/csi/"+url.PathEscape(id)+"/create", nil, req, &out)
}

// CreateVolume submits a decoded volume for creation (Nomad's
// {"Volumes": [...]} shape); the agent validates it as it would a file.
func (c *Client) CreateVolume(ctx context.Context, v *CSIVolume) (*CSIVolumeRegisterResponse, error) {
	var out CSIVolumeRegisterResponse
	req := &CSIVolumeRegisterRequest{Volumes: []*CSIVolume{v}}
	return &out, c.do(ctx, http.MethodPut, "/v1/volume/csi/"+url.PathEscape(v.ID)+"/create", nil, req, &out)
}

// RegisterVolumeSource submits a volume specification file's text for
// registration.
func (c *Client) RegisterVolumeSource(ctx context.Context, id, filename string, src []byte) (*CSIVolumeRegisterResponse, error) {
	var out CSIVolumeRegisterResponse
	req := &CSIVolumeRegisterRequest{Source: string(src), Filename: filename}
	return &out, c.do(ctx, http.MethodPut, "/v1/volume/csi/"+url.PathEscape(id), nil, req, &out)
}

// Volume returns one volume.
func (c *Client) Volume(ctx context.Context, id string) (*CSIVolume, error) {
	var out CSIVolume
	if err := c.do(ctx, http.MethodGet, "/v1/volume/csi/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Volumes lists the volumes, of one plugin if pluginID is set.
func (c *Client) Volumes(ctx context.Context, pluginID string) ([]*CSIVolumeListStub, error) {
	q := url.Values{"type": {"csi"}}
	if pluginID != "" {
		q.Set("plugin_id", pluginID)
	}
	var out []*CSIVolumeListStub
	return out, c.do(ctx, http.MethodGet, "/v1/volumes", q, nil, &out)
}

// DeleteVolume asks for a volume to be deleted at its plugin and forgotten.
func (c *Client) DeleteVolume(ctx context.Context, id string) (*CSIVolume, error) {
	var out CSIVolume
	return &out, c.do(ctx, http.MethodDelete, "/v1/volume/csi/"+url.PathEscape(id)+"/delete", nil, nil, &out)
}

// DeregisterVolume asks for a volume to be forgotten, left at its plugin.
func (c *Client) DeregisterVolume(ctx context.Context, id string, force bool) (*CSIVolume, error) {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	var out CSIVolume
	return &out, c.do(ctx, http.MethodDelete, "/v1/volume/csi/"+url.PathEscape(id), q, nil, &out)
}

// DetachVolume releases the volume's claims of allocations that ended and
// waits until they are unwound.
func (c *Client) DetachVolume(ctx context.Context, id string) (*CSIVolume, error) {
	var out CSIVolume
	return &out, c.do(ctx, http.MethodDelete, "/v1/volume/csi/"+url.PathEscape(id)+"/detach", nil, nil, &out)
}

// ExternalVolumes lists the volumes a plugin reports.
func (c *Client) ExternalVolumes(ctx context.Context, pluginID string) ([]*CSIVolumeExternalStub, error) {
	var out CSIVolumeListExternalResponse
	return out.Volumes, c.do(ctx, http.MethodGet, "/v1/volumes/external", url.Values{"plugin_id": {pluginID}}, nil, &out)
}

// CreateSnapshot snapshots a volume; name may be empty.
func (c *Client) CreateSnapshot(ctx context.Context, volumeID, name string) (*CSISnapshot, error) {
	var out CSISnapshotCreateResponse
	req := &CSISnapshotCreateRequest{Snapshots: []*CSISnapshot{{SourceVolumeID: volumeID, Name: name}}}
	if err := c.do(ctx, http.MethodPost, "/v1/volumes/snapshot", nil, req, &out); err != nil {
		return nil, err
	}
	if len(out.Snapshots) != 1 {
		return nil, fmt.Errorf("snapshot of volume %q: the agent answered %d snapshots", volumeID, len(out.Snapshots))
	}
	return out.Snapshots[0], nil
}

// ListSnapshots lists a plugin's snapshots.
func (c *Client) ListSnapshots(ctx context.Context, pluginID string) ([]*CSISnapshot, error) {
	var out CSISnapshotListResponse
	return out.Snapshots, c.do(ctx, http.MethodGet, "/v1/volumes/snapshot", url.Values{"plugin_id": {pluginID}}, nil, &out)
}

// DeleteSnapshot deletes a snapshot of a plugin.
func (c *Client) DeleteSnapshot(ctx context.Context, pluginID, snapshotID string) error {
	q := url.Values{"plugin_id": {pluginID}, "snapshot_id": {snapshotID}}
	return c.do(ctx, http.MethodDelete, "/v1/volumes/snapshot", q, nil, nil)
}
