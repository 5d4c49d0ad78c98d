// Package sdkcsi holds the CSI half of the sdk: the services a CSI plugin
// puts in sdk.Config.CSI. It is a package of its own so that the sdk package
// does not import the CSI spec, and a plugin of another type (sdk.Config
// with Types) does not link it: go list -deps ./plugins/kv names no
// github.com/container-storage-interface package.
//
//	sdk.Main(sdk.Config{
//		Name: "hello",
//		CSI:  sdkcsi.Services{Identity: identity{}, Node: node{}},
//	})
package sdkcsi

import (
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/sdk"
)

// Services are a CSI plugin's CSI services. Identity is required; a plugin
// serves Controller, Node or both (a monolith).
type Services struct {
	Identity   csi.IdentityServer
	Controller csi.ControllerServer // optional
	Node       csi.NodeServer       // optional
}

var _ sdk.CSIServices = Services{}

// CheckCSI implements sdk.CSIServices.
func (s Services) CheckCSI() error {
	if s.Identity == nil {
		return errors.New("sdk: Config.CSI needs Identity (every CSI plugin serves Identity; Controller and Node are optional)")
	}
	return nil
}

// RegisterCSI implements sdk.CSIServices.
func (s Services) RegisterCSI(srv *grpc.Server) {
	csi.RegisterIdentityServer(srv, s.Identity)
	if s.Controller != nil {
		csi.RegisterControllerServer(srv, s.Controller)
	}
	if s.Node != nil {
		csi.RegisterNodeServer(srv, s.Node)
	}
}
