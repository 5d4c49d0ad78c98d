package plugins

import (
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/csi"
	"google.golang.org/grpc"
)

// clientPool shares one Client per plugin socket among the manager's
// instance managers. A monolith plugin is fingerprinted as node and as
// controller over the same socket; one gRPC connection for both halves the
// connection set-ups after an agent restart, when every restored plugin is
// fingerprinted at once.
//
// A connection someone else already holds open to a socket (the go-plugin
// connection of an sdk plugin, lent by the CSI supervisor) is used instead
// of dialing: a new plugin's first fingerprint then needs no connection
// set-up at all.
type clientPool struct {
	cfg    csi.ClientConfig
	logger hclog.Logger

	mu      sync.Mutex
	clients map[string]*pooledClient
	lent    map[string]*lentConn
}

type lentConn struct{ conn grpc.ClientConnInterface }

type pooledClient struct {
	client *csi.Client
	refs   int
}

func newClientPool(cfg csi.ClientConfig, logger hclog.Logger) *clientPool {
	return &clientPool{cfg: cfg, logger: logger, clients: make(map[string]*pooledClient), lent: make(map[string]*lentConn)}
}

// lend makes conn the connection of clients created for socket from now on,
// until the returned withdraw is called. Clients already made keep theirs.
// The lender keeps ownership: the pool never closes a lent connection, and
// the lender must not close it before withdrawing.
func (p *clientPool) lend(socket string, conn grpc.ClientConnInterface) (withdraw func()) {
	l := &lentConn{conn: conn}
	p.mu.Lock()
	p.lent[socket] = l
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.lent[socket] == l {
				delete(p.lent, socket)
			}
			p.mu.Unlock()
		})
	}
}

// acquire returns the client of socket and a release func that closes it
// after its last user released it.
func (p *clientPool) acquire(socket string) (*csi.Client, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.clients[socket]
	if !ok {
		cfg := p.cfg
		cfg.Endpoint = socket
		cfg.Logger = p.logger.With("socket", socket)
		if l, ok := p.lent[socket]; ok {
			cfg.Conn = l.conn
		}
		c, err := csi.NewClient(cfg)
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
