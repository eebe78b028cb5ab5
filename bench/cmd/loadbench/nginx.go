package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// proxyProc is a proxy process started for a run (nginx: its master, whose children are
// the workers; or the floor proxy).
type proxyProc struct {
	url  string
	cmd  *exec.Cmd
	stop func()
}

// startNginx runs nginx with the given http-level directives and server location block,
// listening on a free port; it returns once nginx answers.
func startNginx(dir, name, httpBlock, location string) (*proxyProc, error) {
	port, err := pgtest.FreePort()
	if err != nil {
		return nil, err
	}
	ndir := filepath.Join(dir, "nginx-"+name)
	_ = os.MkdirAll(filepath.Join(ndir, "tmp"), 0o755)
	conf := fmt.Sprintf(`worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
%[2]s
  server {
    listen 127.0.0.1:%[3]d;
%[4]s
  }
}
`, ndir, httpBlock, port, location)
	confPath := filepath.Join(ndir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("nginx", "-p", ndir, "-c", confPath, "-g", "daemon off;")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		select {
		case <-done:
			return nil, fmt.Errorf("nginx exited: %s", stderr.String())
		default:
		}
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			// SIGQUIT is nginx's graceful stop; its workers exit with the master.
			return &proxyProc{url: url, cmd: cmd, stop: func() { _ = cmd.Process.Signal(syscall.SIGQUIT); <-done }}, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return nil, fmt.Errorf("nginx did not start: %s", stderr.String())
}

// upstreamBlock is the keep-alive pool to the service, as in both nginx configurations.
func upstreamBlock(upstream string) string {
	return fmt.Sprintf("  upstream svc { server %s; keepalive 128; }\n", upstream)
}

const proxyBasics = `      proxy_pass http://svc;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
`

// nginxPlain is a plain keep-alive reverse proxy that adds fixed headers (the signed
// internal headers, made just before the run) to every request.
func nginxPlain(dir, upstream string, headers []string) (*proxyProc, error) {
	var b strings.Builder
	b.WriteString("    location / {\n" + proxyBasics)
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		fmt.Fprintf(&b, "      proxy_set_header %s %q;\n", name, value)
	}
	b.WriteString("    }")
	return startNginx(dir, "plain", upstreamBlock(upstream), b.String())
}

// nginxGateway is nginx doing the gateway's job for one key, as far as nginx can: the API
// key is looked up in a map (an unknown or missing key gets 401 with the error envelope),
// a per-key limit_req zone with the key's rate (1,000,000 per second, burst as large: it
// never refuses here, as the gateway's GCRA does not), a request ID made per request and
// returned to the client, the key dropped, X-Forwarded-* set, and the tenant, key ID and
// signature headers set from the key.
//
// What it does not do, in its favour: the signature is computed once before the run (nginx
// cannot compute an HMAC per request), so it also signs a fixed X-Request-Id, and the
// per-request ID travels to the service as X-Nginx-Request-Id; it sends none of the
// gateway's RateLimit-* headers, keeps no metrics and propagates no trace context.
func nginxGateway(dir, upstream, publicURL, key, keyID, signature string) (*proxyProc, error) {
	if strings.ContainsAny(key+keyID+signature, "\"\\$ \n") {
		return nil, fmt.Errorf("nginx: the key, key ID or signature holds a character the configuration cannot quote")
	}
	envelope := func(status int, code, title, detail string) string {
		return fmt.Sprintf(`{"code":"%s","detail":"%s","requestId":"$request_id","status":%d,"title":"%s","type":"%s/errors/%s"}`,
			code, detail, status, title, strings.TrimRight(publicURL, "/"), strings.ToLower(code))
	}
	httpBlock := upstreamBlock(upstream) + fmt.Sprintf(`  map_hash_bucket_size 128;
  map $http_x_api_key $bench_tenant { default ""; "%[1]s" "%[2]s"; }
  map $http_x_api_key $bench_key_id { default ""; "%[1]s" "%[3]s"; }
  map $http_x_api_key $bench_signature { default ""; "%[1]s" "%[4]s"; }
  limit_req_zone $http_x_api_key zone=keys:10m rate=1000000r/s;
`, key, benchTenant, keyID, signature)
	location := fmt.Sprintf(`    default_type application/json;
    location / {
      add_header X-Request-Id $request_id always;
      if ($bench_tenant = "") {
        return 401 '%[1]s';
      }
      limit_req zone=keys burst=1000000 nodelay;
      limit_req_status 429;
      error_page 429 = @limited;
%[3]s      proxy_set_header X-Api-Key "";
      proxy_set_header %[4]s $bench_tenant;
      proxy_set_header %[5]s $bench_key_id;
      proxy_set_header %[6]s $bench_signature;
      proxy_set_header X-Request-Id "%[7]s";
      proxy_set_header X-Nginx-Request-Id $request_id;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
    location @limited {
      add_header X-Request-Id $request_id always;
      add_header Retry-After 1 always;
      return 429 '%[2]s';
    }`,
		envelope(401, "UNAUTHORIZED", "Unauthorized", "authentication is required"),
		envelope(429, "RATE_LIMITED", "Too Many Requests", "rate limit exceeded"),
		proxyBasics, internalauth.TenantHeader, internalauth.KeyHeader, internalauth.SignatureHeader, benchRequestID)
	return startNginx(dir, "gateway", httpBlock, location)
}
