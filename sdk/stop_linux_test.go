package sdk_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdktest"
)

// Under a live go-plugin host, which keeps stdio and broker streams open for
// good, SIGTERM must still stop the plugin promptly: those streams must not
// hold the stop for the whole StopTimeout (10 s by default).
func TestSIGTERMWithLiveHostStopsPromptly(t *testing.T) {
	p := sdktest.Start(t, bins.TestPlugin)
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(sdk.DefaultStopTimeout/time.Millisecond/2))
	if err != nil && !errors.Is(err, unix.EINTR) {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("plugin still running %v after SIGTERM", sdk.DefaultStopTimeout/2)
	}
}
