package main

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/requestid"
)

// serve runs h on a fresh 127.0.0.1 port until the test ends and returns its address.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

func TestFloorProxyForwardsWithAFreshSignature(t *testing.T) {
	signer, err := internalauth.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	claims := internalauth.Claims{TenantID: "bench", KeyID: "key_1", RequestID: benchRequestID}
	// The service side: what the services' internalauth middleware checks.
	upstream := serve(t, func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Request.Header
		got := internalauth.Claims{TenantID: string(h.Peek(internalauth.TenantHeader)),
			KeyID: string(h.Peek(internalauth.KeyHeader)), RequestID: string(h.Peek(requestid.Header))}
		if err := signer.Verify(string(h.Peek(internalauth.SignatureHeader)), got, time.Now()); err != nil || got != claims {
			ctx.Error("refused: "+got.TenantID+" "+got.KeyID, fasthttp.StatusUnauthorized)
			return
		}
		ctx.SetBodyString("ok " + string(ctx.Path()))
	})
	hc := &fasthttp.HostClient{Addr: upstream}
	floor := serve(t, floorHandler(hc, signer, claims))

	for range 2 { // a second request on the kept-alive connections is signed afresh too
		status, body, err := fasthttp.Get(nil, "http://"+floor+"/v0/topics/t1")
		if err != nil || status != fasthttp.StatusOK || string(body) != "ok /v0/topics/t1" {
			t.Fatalf("the floor proxy must forward with a signature the services accept: %d %q %v", status, body, err)
		}
	}

	down := &fasthttp.HostClient{Addr: "127.0.0.1:1"} // nothing listens on port 1
	broken := serve(t, floorHandler(down, signer, claims))
	status, _, err := fasthttp.Get(nil, "http://"+broken+"/v0/topics/t1")
	if err != nil || status != fasthttp.StatusServiceUnavailable {
		t.Fatalf("an upstream that is down must give 503, got %d %v", status, err)
	}
}
