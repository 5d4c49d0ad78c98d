package csi

import (
	"sync"

	"github.com/hashicorp/go-hclog"
)

// clientPool shares one Client per plugin socket among the manager's
// instance managers. A monolith plugin is fingerprinted as node and as
// controller over the same socket; one gRPC connection for both halves the
// connection set-ups after an agent restart, when every restored plugin is
// fingerprinted at once.
type clientPool struct {
	cfg    ClientConfig
	logger hclog.Logger

	mu      sync.Mutex
	clients map[string]*pooledClient
}

type pooledClient struct {
	client *Client
	refs   int
}

func newClientPool(cfg ClientConfig, logger hclog.Logger) *clientPool {
	return &clientPool{cfg: cfg, logger: logger, clients: make(map[string]*pooledClient)}
}

// acquire returns the client of socket and a release func that closes it
// after its last user released it.
func (p *clientPool) acquire(socket string) (*Client, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.clients[socket]
	if !ok {
		cfg := p.cfg
		cfg.Endpoint = socket
		cfg.Logger = p.logger.With("socket", socket)
		c, err := NewClient(cfg)
		if err != nil {
			return nil, func() {}, err
		}
		pc = &pooledClient{client: c}
		p.clients[socket] = pc
	}
	pc.refs++
	var once sync.Once
	return pc.client, func() { once.Do(func() { p.release(socket, pc) }) }, nil
}

func (p *clientPool) release(socket string, pc *pooledClient) {
	p.mu.Lock()
	pc.refs--
	last := pc.refs == 0
	if last {
		delete(p.clients, socket)
	}
	p.mu.Unlock()
	if last {
		if err := pc.client.Close(); err != nil {
			p.logger.Debug("closing CSI client", "socket", socket, "error", err)
		}
	}
}
