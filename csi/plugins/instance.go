package plugins

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
)

// instanceConfig is what an instance manager needs from its Manager.
type instanceConfig struct {
	info     *dynamic.PluginInfo
	logger   hclog.Logger
	interval time.Duration
	timeout  time.Duration // bounds one fingerprint
	// acquire hands out the shared client of a socket (see clientPool).
	acquire func(socket string) (*csi.Client, func(), error)
	// onUpdate is called with no lock held after every fingerprint (from
	// the instance's goroutine) and on stop (from stop's caller). announce
	// is false for a stop that should not be reported as a health change.
	onUpdate func(prev, cur *Fingerprint, announce bool)
	// standIn, when set, is the healthy fingerprint of the allocation this
	// instance displaced (a rolling update): status views show it until
	// this instance's own first fingerprint is done, so a plugin whose new
	// allocation registered a moment ago is not reported with no healthy
	// instance for the length of one round trip.
	standIn *Fingerprint
}

// instanceManager fingerprints one plugin allocation of one type: at once
// when started, then every interval, and whenever refresh asks (only tests
// do, to fingerprint without waiting for the interval). It owns one
// goroutine (run), started by start and ended by stop.
type instanceManager struct {
	cfg    instanceConfig
	logger hclog.Logger
	fpr    *fingerprinter

	// refreshes carries on-demand requests; each request's channel is
	// closed once a fingerprint that started after the request finished.
	refreshes chan chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	stopOnce  sync.Once

	// release gives the shared client back to the manager's pool.
	release func()

	mu      sync.Mutex
	fp      *Fingerprint
	stopped bool
}

func newInstanceManager(cfg instanceConfig) *instanceManager {
	logger := cfg.logger.Named("instance").With("plugin", cfg.info.Name, "type", cfg.info.Type, "alloc", cfg.info.AllocID)
	im := &instanceManager{
		cfg:       cfg,
		logger:    logger,
		refreshes: make(chan chan struct{}),
		done:      make(chan struct{}),
	}
	socket := ""
	if cfg.info.ConnectionInfo != nil {
		socket = cfg.info.ConnectionInfo.SocketPath
	}
	client, release, err := cfg.acquire(socket)
	if err != nil {
		// The allocation stays visible, unhealthy with the reason, rather
		// than being dropped: a too-long socket path must be seen.
		client = nil
	}
	im.release = release
	im.fpr = newFingerprinter(cfg.info, client, err)
	im.fp = im.fpr.fp.Copy()
	return im
}

// start launches the fingerprint loop. ctx bounds the loop's life; stop
// ends it earlier.
func (im *instanceManager) start(ctx context.Context) {
	ctx, im.cancel = context.WithCancel(ctx)
	go im.run(ctx)
}

func (im *instanceManager) run(ctx context.Context) {
	defer close(im.done)
	var waiting []chan struct{}
	timer := time.NewTimer(0) // the first fingerprint is immediate
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			// Requests still waiting get no fingerprint: refresh sees done
			// and reports the stop.
			return
		case <-timer.C:
		case w := <-im.refreshes:
			waiting = append(waiting, w)
			// Drain requests that arrived together, so that one
			// fingerprint answers them all.
			for more := true; more; {
				select {
				case w := <-im.refreshes:
					waiting = append(waiting, w)
				default:
					more = false
				}
			}
		}
		im.fingerprintOnce(ctx)
		for _, w := range waiting {
			close(w)
		}
		waiting = waiting[:0]
		// The interval counts from the end of the latest fingerprint,
		// whatever triggered it, so a refresh postpones the next tick.
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(im.cfg.interval)
	}
}

func (im *instanceManager) fingerprintOnce(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, im.cfg.timeout)
	cur := im.fpr.run(fctx)
	cancel()
	if ctx.Err() != nil {
		// Stopped mid-fingerprint: the failure is ours, not the plugin's,
		// and stop records the final state.
		return
	}
	im.publish(cur, false, true)
}

// publish records cur unless the instance has been stopped (the final state
// stop records must stay final), then notifies outside the lock.
func (im *instanceManager) publish(cur *Fingerprint, final, announce bool) {
	im.mu.Lock()
	if im.stopped && !final {
		im.mu.Unlock()
		return
	}
	prev := im.fp
	im.fp = cur
	im.stopped = im.stopped || final
	im.mu.Unlock()
	if prev.Healthy != cur.Healthy || prev.FingerprintDone != cur.FingerprintDone {
		level := hclog.Info
		if !cur.Healthy {
			level = hclog.Warn
		}
		im.logger.Log(level, "plugin health", "healthy", cur.Healthy, "reason", cur.HealthDescription)
	}
	if im.cfg.onUpdate != nil {
		im.cfg.onUpdate(prev, cur.Copy(), announce)
	}
}

// refresh takes a fresh fingerprint and waits for it.
func (im *instanceManager) refresh(ctx context.Context) error {
	w := make(chan struct{})
	select {
	case im.refreshes <- w:
	case <-im.done:
		return fmt.Errorf("csi plugin %s (%s, alloc %s): instance stopped", im.cfg.info.Name, im.cfg.info.Type, im.cfg.info.AllocID)
	case <-ctx.Done():
		return fmt.Errorf("csi plugin %s: refresh: %w", im.cfg.info.Name, ctx.Err())
	}
	select {
	case <-w:
		return nil
	case <-im.done:
		select {
		case <-w: // answered just before the stop
			return nil
		default:
			return fmt.Errorf("csi plugin %s (%s, alloc %s): instance stopped during refresh", im.cfg.info.Name, im.cfg.info.Type, im.cfg.info.AllocID)
		}
	case <-ctx.Done():
		return fmt.Errorf("csi plugin %s: refresh: %w", im.cfg.info.Name, ctx.Err())
	}
}

// stop ends the loop, records a final unhealthy fingerprint with reason
// and closes the client. It is idempotent; only the first call counts.
func (im *instanceManager) stop(reason string, announce bool) {
	im.stopOnce.Do(func() { im.stopNow(reason, announce) })
}

func (im *instanceManager) stopNow(reason string, announce bool) {
	if im.cancel != nil {
		im.cancel()
		<-im.done
	}
	im.mu.Lock()
	final := im.fp.Copy()
	im.mu.Unlock()
	final.Healthy = false
	final.HealthDescription = reason
	final.LastFingerprint = time.Now()
	// A stopped instance counts as fingerprinted: nobody must wait for it.
	final.FingerprintDone = true
	im.publish(final, true, announce)
	im.release()
}

// fingerprint returns a copy of the latest fingerprint.
func (im *instanceManager) fingerprint() *Fingerprint {
	var out *Fingerprint
	im.withFingerprint(func(f *Fingerprint) { out = f.Copy() })
	return out
}

// withFingerprint calls fn with the latest fingerprint (the stand-in until
// the first one is done) under the instance's lock: fn must be quick and
// keep nothing of it.
func (im *instanceManager) withFingerprint(fn func(*Fingerprint)) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if !im.fp.FingerprintDone && im.cfg.standIn != nil {
		fn(im.cfg.standIn)
		return
	}
	fn(im.fp)
}

// fingerprintDone reports whether the first fingerprint has finished,
// without copying the fingerprint.
func (im *instanceManager) fingerprintDone() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.fp.FingerprintDone
}

// info returns the registration the instance follows.
func (im *instanceManager) info() *dynamic.PluginInfo { return im.cfg.info }
