package api

import (
	"context"
	"fmt"
	"time"
)

// followActive is what the resolver and the reattach follower share: it
// subscribes to the agent's plugin events first and asks sync for the
// agent's answer second, so that no change falls between the answer and
// the stream; then it hands every PluginActive event of key to onActive,
// and asks sync again when the agent says events were lost. A lost stream
// (an agent restart) is resubscribed with backoff, which starts again
// from its shortest wait once the agent has answered; report is told why
// each subscription ended. It returns when ctx ends.
func followActive(ctx context.Context, c *Client, key string, sync func(context.Context) error,
	onActive func(context.Context, *PluginInstance) error, report func(error)) {
	wait := resolverRetryMin
	for {
		synced, err := followOnce(ctx, c, key, sync, onActive)
		if ctx.Err() != nil {
			return
		}
		if synced {
			// The agent answered this time: the stream's end is a new
			// outage (a restart), not the last one going on.
			wait = resolverRetryMin
		}
		report(err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, resolverRetryMax)
	}
}

// followOnce is one subscription: it returns when the stream ends, and
// whether it got as far as the agent's answer.
func followOnce(ctx context.Context, c *Client, key string, sync func(context.Context) error,
	onActive func(context.Context, *PluginInstance) error) (synced bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Events(sctx, TopicPlugin)
	if err != nil {
		return false, fmt.Errorf("subscribing to the agent's events: %w", err)
	}
	defer stream.Close()
	if err := sync(sctx); err != nil {
		return false, err
	}
	for {
		ev, err := stream.Next(sctx)
		if err != nil {
			return true, fmt.Errorf("agent event stream: %w", err)
		}
		switch {
		case ev.Topic == TopicAgent:
			// Events were lost or this subscriber was dropped: what is
			// active now is the agent's to say.
			if err := sync(sctx); err != nil {
				return true, err
			}
		case ev.Type == EventPluginActive && ev.Key == key:
			if err := onActive(sctx, ev.Payload.Instance); err != nil {
				return true, err
			}
		}
	}
}
