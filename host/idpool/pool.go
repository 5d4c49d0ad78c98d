package idpool

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"sync"
)

// ErrExhausted means every id of the range is held.
var ErrExhausted = errors.New("no dynamic workload id left")

// ErrShared means a restored allocation's id is leased by another agent of
// the machine too: both agents' tasks have it (ids handed out before
// leases existed). The allocation keeps it; the caller says so.
var ErrShared = errors.New("dynamic id shared with another agent")

// Pool is a range of ids and who holds which. It is safe for concurrent
// use.
type Pool struct {
	min, max uint32
	// known reports whether the host's user or group database names id;
	// such ids are skipped.
	known func(id uint32) bool

	// leases, when set, are shared with the machine's other agents: an
	// id another agent holds is skipped.
	leases *Leases

	mu     sync.Mutex
	held   map[uint32]string // id -> owner
	owners map[string][]uint32
	next   uint32 // where the search for a free id starts
}

// New returns a pool of the ids min..max (inclusive).
func New(min, max uint32) (*Pool, error) {
	return newPool(min, max, inUserDB)
}

func newPool(min, max uint32, known func(uint32) bool) (*Pool, error) {
	if min == 0 || min > max {
		return nil, fmt.Errorf("dynamic id range %d-%d: want 0 < min <= max", min, max)
	}
	return &Pool{min: min, max: max, known: known, held: map[uint32]string{}, owners: map[string][]uint32{}, next: min}, nil
}

// ShareWith makes the pool take a lease of every id it hands out or holds,
// and skip ids another agent of the machine leases. Call it before the
// pool is used.
func (p *Pool) ShareWith(l *Leases) { p.leases = l }

// Range is the pool's range.
func (p *Pool) Range() (min, max uint32) { return p.min, p.max }

// Contains reports whether id is in the pool's range.
func (p *Pool) Contains(id uint32) bool { return id >= p.min && id <= p.max }

// Acquire takes n free ids for owner (an allocation ID). It takes all or
// none.
func (p *Pool) Acquire(owner string, n int) ([]uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	size := uint64(p.max) - uint64(p.min) + 1
	out := make([]uint32, 0, n)
	id := p.next
	var leaseErr error
	for tried := uint64(0); len(out) < n && tried < size; tried++ {
		if _, taken := p.held[id]; !taken && !p.known(id) {
			ok := true
			if p.leases != nil {
				if ok, leaseErr = p.leases.take(id); leaseErr != nil {
					break
				}
			}
			if ok {
				out = append(out, id)
				p.held[id] = owner
			}
		}
		if id == p.max {
			id = p.min
		} else {
			id++
		}
	}
	if len(out) < n {
		for _, id := range out {
			delete(p.held, id)
			if p.leases != nil {
				p.leases.drop(id)
			}
		}
		if leaseErr != nil {
			return nil, leaseErr
		}
		return nil, fmt.Errorf("%w: allocation %s needs %d of %d-%d (%d held); raise dynamic_user_max or collect old allocations",
			ErrExhausted, owner, n, p.min, p.max, len(p.held))
	}
	// Round robin: an id freed a moment ago is the last one handed out
	// again, which keeps a reused uid far from its previous files in time.
	p.next = id
	p.owners[owner] = append(p.owners[owner], out...)
	return out, nil
}

// Hold records that owner holds ids, as a restored allocation does. Ids
// outside the range are ignored (the range changed since they were
// handed out: they are no longer the pool's to give). An id held by
// another owner is an error: two allocations would share a uid.
func (p *Pool) Hold(owner string, ids ...uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if !p.Contains(id) {
			continue
		}
		if o, taken := p.held[id]; taken && o != owner {
			return fmt.Errorf("dynamic id %d is held by allocation %s and allocation %s", id, o, owner)
		}
	}
	// After the checks above, the ids are held whatever the leases say.
	var conflicts []error
	for _, id := range ids {
		if p.Contains(id) {
			if _, taken := p.held[id]; !taken {
				p.held[id] = owner
				p.owners[owner] = append(p.owners[owner], id)
			}
			// An allocation restored from before leases (or from an
			// agent that shared its ids unknowingly) keeps its ids; the
			// conflict is reported, not resolved by taking them away.
			if p.leases != nil {
				if ok, err := p.leases.take(id); err != nil || !ok {
					if err == nil {
						err = fmt.Errorf("dynamic id %d of allocation %s is leased by the agent of %s too: %w", id, owner, p.leases.holder(id), ErrShared)
					}
					conflicts = append(conflicts, err)
				}
			}
		}
	}
	return errors.Join(conflicts...)
}

// Release gives back every id owner holds.
func (p *Pool) Release(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range p.owners[owner] {
		delete(p.held, id)
		if p.leases != nil {
			p.leases.drop(id)
		}
	}
	delete(p.owners, owner)
}

// Held is how many ids are held.
func (p *Pool) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// inUserDB reports whether the user or group database names id.
func inUserDB(id uint32) bool {
	s := strconv.FormatUint(uint64(id), 10)
	if _, err := user.LookupId(s); err == nil {
		return true
	}
	_, err := user.LookupGroupId(s)
	return err == nil
}
