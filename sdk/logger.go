package sdk

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	hclog "github.com/hashicorp/go-hclog"
)

// NewLogger returns the logger a plugin should use: JSON lines carrying
// @level, @message, @module and @timestamp, which pluginhost reads from
// $PLUGINHOST_LOG_FILE and shows in its own log under the plugin's name, at
// their own level (see the package doc, Logging).
//
// The level comes from $PLUGINHOST_LOG_LEVEL (trace, debug, info, warn,
// error; info when unset or unknown). Every line is appended to
// $PLUGINHOST_LOG_FILE when that is set, so nothing is lost while no host is
// reading, and is also written to stderr best-effort: when stderr is a pipe
// that is full or has no reader left, the line is dropped rather than
// blocking the caller.
func NewLogger(name string) hclog.Logger {
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	level := hclog.LevelFromString(os.Getenv(EnvLogLevel))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	sinks := &fanout{}
	var problems []string
	if path := os.Getenv(EnvLogFile); path != "" {
		f, err := openLogFile(path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("open log file %s: %v", path, err))
		} else {
			sinks.ws = append(sinks.ws, f)
		}
	}
	if nb, _, err := stdioWriter(os.Stderr); err != nil {
		if nb != nil {
			problems = append(problems, fmt.Sprintf("stderr stays blocking: %v", err))
			sinks.ws = append(sinks.ws, nb)
		}
	} else {
		sinks.ws = append(sinks.ws, nb)
	}
	l := hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      level,
		JSONFormat: true,
		Output:     sinks,
	})
	for _, p := range problems {
		l.Warn("logging degraded", "problem", p)
	}
	return l
}

// fanout writes every line to each sink and ignores sink errors: a full
// stderr pipe must neither block the file sink nor fail the log call, which
// io.MultiWriter would do.
type fanout struct {
	mu sync.Mutex
	ws []io.Writer
}

func (f *fanout) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.ws {
		_, _ = w.Write(p)
	}
	return len(p), nil
}
