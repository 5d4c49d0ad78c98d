// Command kvclient is an example consumer of a plugin hosted by pluginhost:
// it reaches the kv plugin (plugins/kv) through the API client's resolver,
// which asks the agent where the plugin's active instance is and follows
// it across rolling updates and restarts. Its calls go to the plugin's
// socket directly; the agent is not on the data path.
//
//	kvclient -addr unix:///path/to/api.sock put greeting hello
//	kvclient get greeting
//	kvclient -target pluginhost:///kv/kv-main loop 100ms
//
// loop puts and gets a counter every interval until interrupted, printing
// which instance answered, so that a rolling update (pluginhost job run
// with a changed job) or a kill -9 of the plugin shows the connection
// moving to the new instance.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/plugins/kv/kvpb"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kvclient:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kvclient", flag.ContinueOnError)
	// "" is the default address, where an agent without addr listens, as
	// for the CLI.
	addr := fs.String("addr", os.Getenv(api.EnvAddr), "the agent's API address ($PLUGINHOST_ADDR; default: where an agent without addr listens)")
	// Without one, the client uses the token the agent left for its own
	// user; on a unix socket none is needed.
	token := fs.String("token", os.Getenv("PLUGINHOST_TOKEN"), "the agent's API token ($PLUGINHOST_TOKEN)")
	target := fs.String("target", "pluginhost:///kv/kv-main", "the plugin, as pluginhost:///TYPE/NAME")
	timeout := fs.Duration("timeout", 30*time.Second, "how long one call may wait for an instance")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := api.NewClient(*addr, api.WithToken(*token))
	if err != nil {
		return err
	}
	defer client.Close()
	conn, err := grpc.NewClient(*target,
		grpc.WithResolvers(api.NewResolverBuilder(client)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A call made while the plugin restarts waits for its next
		// instance instead of failing.
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		return err
	}
	defer conn.Close()
	kv := kvpb.NewKVClient(conn)

	rest := fs.Args()
	if len(rest) == 0 {
		return errors.New("want a command: put KEY VALUE, get KEY or loop INTERVAL")
	}
	call := func(f func(ctx context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		return f(cctx)
	}
	switch {
	case rest[0] == "put" && len(rest) == 3:
		return call(func(ctx context.Context) error {
			resp, err := kv.Put(ctx, &kvpb.PutRequest{Key: rest[1], Value: []byte(rest[2])})
			if err == nil {
				fmt.Printf("stored by %s\n", resp.GetInstance())
			}
			return err
		})
	case rest[0] == "get" && len(rest) == 2:
		return call(func(ctx context.Context) error {
			resp, err := kv.Get(ctx, &kvpb.GetRequest{Key: rest[1]})
			if err != nil {
				return err
			}
			if !resp.GetFound() {
				return fmt.Errorf("%s: not found (instance %s)", rest[1], resp.GetInstance())
			}
			fmt.Printf("%s\n", resp.GetValue())
			return nil
		})
	case rest[0] == "loop" && len(rest) == 2:
		every, err := time.ParseDuration(rest[1])
		if err != nil || every <= 0 {
			return fmt.Errorf("loop: interval %q is not a positive duration", rest[1])
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			err := call(func(ctx context.Context) error {
				resp, err := kv.Put(ctx, &kvpb.PutRequest{Key: "counter", Value: []byte(strconv.Itoa(i))})
				if err == nil {
					fmt.Printf("%s put counter=%d on %s\n", time.Now().Format(time.TimeOnly), i, resp.GetInstance())
				}
				return err
			})
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "call %d: %v\n", i, err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
	return fmt.Errorf("unknown command %q: want put KEY VALUE, get KEY or loop INTERVAL", rest)
}
