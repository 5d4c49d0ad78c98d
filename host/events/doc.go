// Package events carries the agent's events: Broker fans them out to the
// API's event stream, TaskQueue hands task events from the task runners to
// the agent.
//
// # Why three mechanisms
//
// The agent has three pub/sub mechanisms, on purpose: their guarantees
// differ, and none of them could carry the others' traffic.
//
//   - dynamic's feed (package dynamic): every registry event, for
//     consumers that must see each one, in order (the CSI manager, the
//     agent's follower of plugin types). Subscribers walk an append-only
//     list at their own pace; the registry never waits for them and never
//     drops an event.
//   - Broker: the API's event stream, read by clients the agent does not
//     control. Publishing never blocks; a subscriber whose buffer is full
//     is told and dropped rather than slowing the agent down or making it
//     buffer without bound, and the last events are kept for clients that
//     resume after an index (Nomad's ?index=).
//   - TaskQueue: one unbounded hand-off from the task runners' goroutines,
//     which must never block and may hold their own locks while they
//     announce, to the one goroutine that may take an allocation's
//     snapshot (the agent's forwarder). It has a single consumer, which
//     feeds the Broker and the job queue; a drop here would lose a task
//     event for good, and a block would stall a task runner.
package events
