// Command testplugin is a minimal sdk plugin for the go_plugin driver
// tests. With TESTPLUGIN_BAD_STDERR=1 it writes {"@message": 42}, a line
// that panics go-plugin v1.8's stderr log parser, straight to fd 2, before
// and after the handshake. With TESTPLUGIN_V6ONLY=<port> it listens on
// [::]:<port> with IPV6_V6ONLY, announces 127.0.0.1:<port> (which that
// socket never takes) and waits: the liar of the TCP handshake check.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

type identity struct {
	csi.UnimplementedIdentityServer
}

func (identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "testplugin.pluginhost", VendorVersion: "0.0.1"}, nil
}

func (identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func main() {
	if port := os.Getenv("TESTPLUGIN_V6ONLY"); port != "" {
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1) })
			if err != nil {
				return err
			}
			return serr
		}}
		l, err := lc.Listen(context.Background(), "tcp6", "[::]:"+port)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer l.Close()
		fmt.Printf("1|1|tcp|127.0.0.1:%s|grpc\n", port)
		time.Sleep(time.Minute)
		return
	}
	bad := os.Getenv("TESTPLUGIN_BAD_STDERR") == "1"
	fd2 := os.NewFile(2, "fd2")
	if bad {
		fd2.WriteString("{\"@message\": 42}\n")
		go func() {
			// After go-plugin has swapped os.Stderr, fd 2 is still the
			// process's real stderr.
			for i := 0; i < 3; i++ {
				fd2.WriteString("{\"@message\": 42}\n")
			}
		}()
	}
	sdk.Main(sdk.Config{Name: "testplugin", CSI: sdkcsi.Services{Identity: identity{}}})
}
