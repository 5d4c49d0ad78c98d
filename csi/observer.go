package csi

import (
	"time"

	"google.golang.org/grpc/codes"
)

// RPCObserver is told about every CSI call a Client makes: the method name
// as the CSI spec spells it ("Probe", "CreateVolume"), the gRPC code of the
// outcome (codes.OK on success; a call cut short by its context reports
// the plugin's last answer or DeadlineExceeded/Canceled), and how long the
// whole call took, retries included. It is called from the calling
// goroutine after the call and must be safe for concurrent use and quick.
//
// The package defines the interface instead of importing a metrics library
// so that it stays usable without the agent; the agent's metrics implement
// it (plugins.ManagerConfig.Client.Observer).
type RPCObserver interface {
	ObserveRPC(method string, code codes.Code, d time.Duration)
}
