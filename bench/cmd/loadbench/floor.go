package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/requestid"
)

// The floor proxy is the least a proxy on the gateway's stack does per request: a plain
// fasthttp server whose handler sets the internal headers, signs them afresh (as the
// gateway does, unlike nginx, which cannot) and forwards the request over a pooled
// fasthttp.HostClient with the gateway's client settings. It checks no key, applies no
// rate limit, keeps no metrics, makes no request ID and no trace context. Its row in the
// read table is what the gateway's CPU per request would be with all of its own work
// taken away: the cost of fasthttp and the Go runtime moving the request and its answer.
//
// It runs as its own process (this program started again with -floor-proxy), so that
// its CPU is read from /proc like the gateway's and nginx's.

// floorEnv names the settings the floor proxy process reads: the internal-auth secret
// (hex), the tenant and the key ID it signs for.
const (
	floorEnvSecret = "LOADBENCH_FLOOR_SECRET"
	floorEnvTenant = "LOADBENCH_FLOOR_TENANT"
	floorEnvKeyID  = "LOADBENCH_FLOOR_KEY_ID"
)

// serveFloorProxy is the floor proxy process: it listens on listen and forwards to
// upstream until it is killed.
func serveFloorProxy(listen, upstream string) error {
	secret, err := hex.DecodeString(os.Getenv(floorEnvSecret))
	if err != nil {
		return fmt.Errorf("floor proxy: %s: %w", floorEnvSecret, err)
	}
	signer, err := internalauth.New(secret)
	if err != nil {
		return fmt.Errorf("floor proxy: %w", err)
	}
	claims := internalauth.Claims{TenantID: os.Getenv(floorEnvTenant), KeyID: os.Getenv(floorEnvKeyID), RequestID: benchRequestID}
	// The gateway's upstream client settings (gateway/internal/proxy.NewUpstream).
	hc := &fasthttp.HostClient{Addr: upstream, Name: "loadbench-floor", MaxConns: 1024,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxIdleConnDuration: time.Minute,
		DisableHeaderNamesNormalizing: true, DisablePathNormalizing: true, NoDefaultUserAgentHeader: true}
	srv := &fasthttp.Server{Handler: floorHandler(hc, signer, claims), Name: "loadbench-floor",
		DisableHeaderNamesNormalizing: true, NoDefaultServerHeader: true}
	return srv.ListenAndServe(listen)
}

// floorHandler forwards a request with freshly signed internal headers for claims.
func floorHandler(hc *fasthttp.HostClient, signer *internalauth.Signer, claims internalauth.Claims) fasthttp.RequestHandler {
	signature := []byte(internalauth.SignatureHeader)
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Request.Header
		h.Del("Connection")
		h.Set(internalauth.TenantHeader, claims.TenantID)
		h.Set(internalauth.KeyHeader, claims.KeyID)
		h.Set(requestid.Header, claims.RequestID)
		var buf [96]byte
		h.SetCanonical(signature, signer.AppendSignature(buf[:0], claims, time.Now()))
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Response.Reset()
			ctx.Error("upstream: "+err.Error(), fasthttp.StatusServiceUnavailable)
		}
	}
}

// startFloor starts the floor proxy process in front of upstream (host:port), signing for s's
// bench key, and waits until it accepts connections.
func startFloor(s *system, upstream string) (*proxyProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := pgtest.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(self, "-floor-proxy", upstream, "-floor-listen", addr)
	cmd.Env = append(os.Environ(), floorEnvSecret+"="+hex.EncodeToString(s.stack.InternalAuthSecret()),
		floorEnvTenant+"="+benchTenant, floorEnvKeyID+"="+s.keyID)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("floor proxy: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); <-done }
	for range 100 {
		select {
		case <-done:
			return nil, errors.New("floor proxy exited before it listened")
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return &proxyProc{url: "http://" + addr, cmd: cmd, stop: stop}, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return nil, errors.New("floor proxy did not listen within 5s")
}
