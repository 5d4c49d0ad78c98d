// Package reconcile is the agent's one mechanism for multi-step work:
// durable desired state, driven by idempotent reconcilers.
//
// An operation with more than one step (a job submission, an update, a stop,
// a volume create, expand or delete, a claim, a release) first records in
// the state store what should be true, in one commit, and then adds the
// object's key to a Queue. The queue's Func reads the recorded desired state, compares it with
// what is (running allocations, a plugin's answers) and takes the next steps
// towards it. Because the intent is durable and the Func idempotent, an agent
// killed at any moment finds the intent again at start-up, adds every key,
// and the same Func finishes the work: there is no separate recovery code
// path to get wrong (Nomad's restore bugs are what happens with one).
//
// The queue follows Kubernetes' controller work queue:
//
//   - keyed by object: adds of a key coalesce, so a burst of events about one
//     job is one pass;
//   - one pass per key at a time, keys in parallel (Config.Workers); a key
//     added during its own pass runs once more afterwards, so no change is
//     missed and none is acted on twice at once;
//   - a failed pass is retried after a per-key delay doubling from
//     Config.BaseDelay up to Config.MaxDelay; Status reports the attempt
//     count and last error for status views;
//   - a pass may ask to be run again later (Result.RequeueAfter), for
//     deadlines such as an update's wait for new allocations;
//   - a panicking Func is a failed pass, not a dead agent.
//
// AddAndWait lets a request handler wait for the first pass that started
// after its write, so an API call can answer with what the pass did while the
// work itself never depends on the caller staying connected.
package reconcile
