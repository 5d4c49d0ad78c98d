package main

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pluginhost/pluginhost/plugins/kv/kvpb"
)

// maxKeyLen bounds keys, so that a careless client cannot grow the store
// by its keys alone; values are bounded by gRPC's message size.
const maxKeyLen = 1024

// store is the KV service: a map behind a lock.
type store struct {
	kvpb.UnimplementedKVServer
	instance string

	mu   sync.RWMutex
	data map[string][]byte
}

func newStore(instance string) *store {
	return &store{instance: instance, data: map[string][]byte{}}
}

func checkKey(key string) error {
	switch {
	case key == "":
		return status.Error(codes.InvalidArgument, "key: must not be empty")
	case len(key) > maxKeyLen:
		return status.Errorf(codes.InvalidArgument, "key: %d bytes, the limit is %d", len(key), maxKeyLen)
	}
	return nil
}

func (s *store) Put(_ context.Context, req *kvpb.PutRequest) (*kvpb.PutResponse, error) {
	if err := checkKey(req.GetKey()); err != nil {
		return nil, err
	}
	v := append([]byte(nil), req.GetValue()...)
	s.mu.Lock()
	s.data[req.GetKey()] = v
	s.mu.Unlock()
	return &kvpb.PutResponse{Instance: s.instance}, nil
}

func (s *store) Get(_ context.Context, req *kvpb.GetRequest) (*kvpb.GetResponse, error) {
	if err := checkKey(req.GetKey()); err != nil {
		return nil, err
	}
	s.mu.RLock()
	v, ok := s.data[req.GetKey()]
	s.mu.RUnlock()
	return &kvpb.GetResponse{Value: v, Found: ok, Instance: s.instance}, nil
}
