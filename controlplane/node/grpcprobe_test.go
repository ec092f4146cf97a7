package node

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestGRPCHandler: a gRPC probe calls the standard health service on the
// pod's IP: SERVING passes, NOT_SERVING, an unknown service, a server
// without the health service and one that never answers fail with the
// kubelet's messages.
func TestGRPCHandler(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("", grpc_health_v1.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	calls := make(chan struct{}, 10)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		select {
		case calls <- struct{}{}:
		default:
		}
		return h(ctx, req)
	}))
	grpc_health_v1.RegisterHealthServer(srv, hs)
	go srv.Serve(lis)
	defer srv.Stop()
	port := int32(lis.Addr().(*net.TCPAddr).Port)

	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := grpc.NewServer()
	go plain.Serve(bare)
	defer plain.Stop()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	target := probeTarget{podIP: "127.0.0.1"}
	// The silent server's probe times out; the others answer well within
	// their generous timeout.
	for _, tc := range []struct {
		port    int32
		service *string
		timeout time.Duration
		want    string
	}{
		{port, nil, 30 * time.Second, ""},
		{port, ptr.To("down"), 30 * time.Second, `service unhealthy (responded with "NOT_SERVING")`},
		{port, ptr.To("nothing"), 30 * time.Second, "error: health rpc probe failed"},
		{int32(bare.Addr().(*net.TCPAddr).Port), nil, 30 * time.Second, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health)"},
		{int32(silent.Addr().(*net.TCPAddr).Port), nil, 300 * time.Millisecond, "timeout: failed to connect service"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
		err := grpcHandler(ctx, target, &corev1.GRPCAction{Port: tc.port, Service: tc.service}, tc.timeout)
		cancel()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("port %d service %v: %v, want %q", tc.port, ptr.Deref(tc.service, ""), err, tc.want)
		}
	}
	if len(calls) == 0 {
		t.Error("the health server was never called")
	}
}
