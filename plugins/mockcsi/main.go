package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/sdk"
)

// options is everything the command line and environment decide.
type options struct {
	DriverName  string
	NodeID      string
	StateDir    string
	Endpoint    string
	Capacity    int64
	MountMethod string
	// MaxVolumes bounds the volumes controller-published to the node
	// (0: no limit), reported as NodeGetInfo's max_volumes_per_node.
	MaxVolumes int64
	// RecordCalls keeps <state dir>/calls.json (see calls.go). It costs a
	// file write per call, so it is for tests of a CO, off by default.
	RecordCalls bool
	Faults      faultConfig
}

// Environment variables for fault injection; each has a flag of the same
// meaning, and the flag wins when both are set.
const (
	envProbeFail   = "MOCKCSI_PROBE_FAIL"
	envProbeDelay  = "MOCKCSI_PROBE_DELAY"
	envNotReadyFor = "MOCKCSI_NOT_READY_FOR"
	envLatency     = "MOCKCSI_LATENCY"
	envCrashAfter  = "MOCKCSI_CRASH_AFTER"
	envExitAtStart = "MOCKCSI_EXIT_AT_START"
	envFail        = "MOCKCSI_FAIL"
	envDelay       = "MOCKCSI_DELAY"
	envRecordCalls = "MOCKCSI_RECORD_CALLS"
)

const defaultDriverName = "mockcsi.pluginhost.dev"

// defaultCapacity is the pool volumes and snapshots are carved from. It is
// accounting only (directories take what they hold), so it can be generous.
const defaultCapacity int64 = 100 << 30

// defaultStateDir prefers the task's own directory under pluginhost or
// Nomad, then the XDG state dir, then a per-user dir in /tmp, so that the
// binary runs with no flags at all.
func defaultStateDir(getenv func(string) string) string {
	if d := getenv("NOMAD_TASK_DIR"); d != "" {
		return filepath.Join(d, "mockcsi")
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mockcsi")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mockcsi-%d", os.Getuid()))
}

// parseOptions reads flags and environment. Environment values become the
// flags' defaults, so a flag overrides its variable; a malformed variable is
// an error, not silently ignored.
func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	var errs []error
	envDur := func(name string) time.Duration {
		v := getenv(name)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a non-negative duration such as 2s", name, v))
		}
		return d
	}
	envInt := func(name string) (int, bool) {
		v := getenv(name)
		if v == "" {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer", name, v))
			return 0, false
		}
		return n, true
	}
	envBool := func(name string) bool {
		v := getenv(name)
		if v == "" {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want 1/0/true/false", name, v))
		}
		return b
	}
	hostname, _ := os.Hostname()
	exitDefault, exitSet := envInt(envExitAtStart)
	crashDefault, _ := envInt(envCrashAfter)

	fs := flag.NewFlagSet("mockcsi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.DriverName, "driver-name", defaultDriverName, "CSI plugin name reported by GetPluginInfo")
	fs.StringVar(&o.NodeID, "node-id", hostname, "node ID reported by NodeGetInfo (default: hostname)")
	fs.StringVar(&o.StateDir, "state-dir", defaultStateDir(getenv), "directory holding volumes, snapshots and state.json")
	endpoint := fs.String("endpoint", getenv(sdk.EnvCSIEndpoint), "CSI endpoint when run standalone (default $CSI_ENDPOINT)")
	capacity := fs.String("capacity", "100Gi", "total capacity for volumes and snapshots (bytes, or with Ki/Mi/Gi/Ti, K/M/G/T)")
	fs.Int64Var(&o.MaxVolumes, "max-volumes-per-node", 0, "most volumes published to the node at once, 0 = no limit")
	fs.StringVar(&o.MountMethod, "mount-method", mountAuto, "how volumes are attached: auto (bind, else symlink), bind, symlink")
	fs.BoolVar(&o.Faults.ProbeFail, "probe-fail", envBool(envProbeFail), "Probe returns an error ($"+envProbeFail+")")
	fs.DurationVar(&o.Faults.ProbeDelay, "probe-delay", envDur(envProbeDelay), "Probe takes this long ($"+envProbeDelay+")")
	fs.DurationVar(&o.Faults.NotReadyFor, "not-ready-for", envDur(envNotReadyFor), "Probe says ready=false for this long after start ($"+envNotReadyFor+")")
	fs.DurationVar(&o.Faults.Latency, "latency", envDur(envLatency), "added to every RPC ($"+envLatency+")")
	fs.IntVar(&o.Faults.CrashAfter, "crash-after", crashDefault, "exit after answering this many RPCs, 0 = never ($"+envCrashAfter+")")
	exitAt := fs.Int("exit-at-start", exitDefault, "exit with this code before serving ($"+envExitAtStart+")")
	fs.BoolVar(&o.RecordCalls, "record-calls", envBool(envRecordCalls), "keep <state dir>/calls.json, a record of CSI calls per volume ($"+envRecordCalls+")")
	delaySpec := fs.String("delay", getenv(envDelay), "Method:duration,...: answer Method this much later, after its work is done ($"+envDelay+")")
	failSpec := fs.String("fail", getenv(envFail), "Method:N:CODE,...: the first N calls of Method fail with CODE, N=* for all ($"+envFail+")")
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	// A bad list is reported under the name it was given by, so that the
	// test that set it knows which setting to fix.
	failSource, delaySource := envFail, envDelay
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "exit-at-start":
			exitSet = true
		case "fail":
			failSource = "--fail"
		case "delay":
			delaySource = "--delay"
		}
	})
	if exitSet {
		o.Faults.ExitAtStart = exitAt
	}
	if o.MaxVolumes < 0 {
		return o, fmt.Errorf("--max-volumes-per-node must not be negative")
	}
	if o.Faults.CrashAfter < 0 {
		return o, fmt.Errorf("--crash-after must not be negative")
	}
	fail, err := parseFailRules(*failSpec)
	if err != nil {
		return o, fmt.Errorf("%s=%q: %w", failSource, *failSpec, err)
	}
	o.Faults.Fail = fail
	delays, err := parseDelays(*delaySpec)
	if err != nil {
		return o, fmt.Errorf("%s=%q: %w", delaySource, *delaySpec, err)
	}
	o.Faults.Delay = delays
	o.Endpoint = *endpoint
	n, err := parseSize(*capacity)
	if err != nil {
		return o, fmt.Errorf("--capacity: %w", err)
	}
	o.Capacity = n
	if o.NodeID == "" {
		return o, fmt.Errorf("no hostname to default --node-id to; pass --node-id")
	}
	return o, nil
}

// parseSize reads a byte count with an optional binary (Ki, Mi, Gi, Ti) or
// decimal (K, M, G, T) suffix.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q overflows", s)
	}
	return n * mult, nil
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mockcsi:", err)
		os.Exit(2)
	}
	// Before anything else, so that a test asking for a failed start sees
	// nothing else happen (no state dir, no socket).
	newFaults(opts.Faults, os.Exit).exitAtStart()

	log := sdk.NewLogger("mockcsi")
	d, err := newDriver(opts, log, os.Exit)
	if err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
	log.Info("starting", "driver", opts.DriverName, "node_id", opts.NodeID, "state_dir", opts.StateDir,
		"capacity", opts.Capacity, "mount_method", opts.MountMethod, "faults", fmt.Sprintf("%+v", opts.Faults))
	cfg := d.sdkConfig()
	cfg.Endpoint, cfg.Logger = opts.Endpoint, log
	sdk.Main(cfg)
}
