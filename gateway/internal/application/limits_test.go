package application

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// A service's answer over UPSTREAM_MAX_RESPONSE_BYTES, with a length or chunked, is a
// logged 503 in the envelope, and the gateway does not hold it: it allocates a fraction
// of its size. An answer at the limit passes, later requests are served, and a signed
// download larger than the limit still streams through.
func TestUpstreamAnswersAreBounded(t *testing.T) {
	const limit = 1 << 20
	const big = 16 << 20
	filler := func(n int) []byte {
		return append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), n-8)...), '"', '}')
	}
	atLimit := filler(limit)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
		case "/v0/topics/big":
			w.Header().Set("Content-Length", fmt.Sprint(big))
			_, _ = io.Copy(w, io.MultiReader(strings.NewReader(`{"x":"`), io.LimitReader(letterA{}, big-6)))
		case "/v0/topics/chunked":
			_, _ = io.Copy(w, io.MultiReader(strings.NewReader(`{"x":"`), io.LimitReader(letterA{}, big)))
		case "/v0/topics/at-limit":
			_, _ = w.Write(atLimit)
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(up.Close)
	files := newSink(t, 4<<20)
	var logs syncBuffer
	g := startWith(t, observed{log: slog.New(slog.NewJSONHandler(&logs, nil))}, pgtest.NewDatabase(t),
		map[string]string{"topics": up.URL, "assets": files.srv.URL}, func(c *Config) {
			c.Proxy.MaxResponseBytes = limit
			c.Proxy.Timeout = 10 * time.Second
			c.Proxy.TransferTimeout = 30 * time.Second
		})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)
	c.Contract = nil // the upstream is not the real topics service

	for _, path := range []string{"/v0/topics/big", "/v0/topics/chunked"} {
		var status int
		var body string
		alloc := allocated(func() {
			r := c.Do("GET", path, nil)
			status, body = r.Status, r.String()
		})
		if status != 503 || !strings.Contains(body, "SERVICE_UNAVAILABLE") || !strings.Contains(body, "exceeds the gateway's limit of 1048576 bytes") {
			t.Fatalf("GET %s: an answer over UPSTREAM_MAX_RESPONSE_BYTES must be a 503 naming the limit, got %d %.300s", path, status, body)
		}
		if alloc > big/4 {
			t.Errorf("GET %s: %d bytes allocated for a %d-byte answer: an answer over the limit must not be buffered", path, alloc, big)
		}
	}
	if !strings.Contains(logs.String(), "exceeds the gateway's limit") {
		t.Errorf("an answer over the limit must be logged, the log holds: %.500s", logs.String())
	}
	if r := c.Do("GET", "/v0/topics/at-limit", nil); r.Status != 200 || len(r.Body) != limit {
		t.Fatalf("an answer of exactly the limit must pass: %d, %d bytes", r.Status, len(r.Body))
	}
	if r := c.Do("GET", "/v0/topics/after", nil); r.Status != 200 {
		t.Fatalf("the gateway must keep serving after refusing an answer: %s", r)
	}
	resp, err := http.Get(g.public + "/v0/asset_files/tok")
	if err != nil {
		t.Fatal(err)
	}
	_, n := digest(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != 4<<20 {
		t.Fatalf("a signed download larger than UPSTREAM_MAX_RESPONSE_BYTES must stream through: %d, %d bytes", resp.StatusCode, n)
	}
}

// letterA is an endless reader of the letter a (valid inside a JSON string).
type letterA struct{}

func (letterA) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// UPSTREAM_MAX_RESPONSE_BYTES and KEY_CACHE_MAX_STALENESS have documented defaults and
// refuse values outside their ranges.
func TestGatewayLimitSettings(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_TOKEN": adminToken,
		"KEY_HASH_PEPPER": strings.Repeat("p", 32), "INTERNAL_AUTH_SECRET": strings.Repeat("s", 32)}
	c, err := ConfigFromEnv(config.FromMap(env))
	if err != nil || c.Proxy.MaxResponseBytes != 16<<20 {
		t.Fatalf("UPSTREAM_MAX_RESPONSE_BYTES must default to 16 MiB: %d, %v", c.Proxy.MaxResponseBytes, err)
	}
	for v, ok := range map[string]bool{"33554432": true, "1048575": false, "0": false, "2147483648": false} {
		env["UPSTREAM_MAX_RESPONSE_BYTES"] = v
		c, err := ConfigFromEnv(config.FromMap(env))
		if ok && (err != nil || c.Proxy.MaxResponseBytes != 32<<20) {
			t.Errorf("UPSTREAM_MAX_RESPONSE_BYTES=%s: %d, %v", v, c.Proxy.MaxResponseBytes, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "UPSTREAM_MAX_RESPONSE_BYTES")) {
			t.Errorf("UPSTREAM_MAX_RESPONSE_BYTES=%s must be refused (1 MiB to 1 GiB), got %v", v, err)
		}
	}
	delete(env, "UPSTREAM_MAX_RESPONSE_BYTES")
	if c, err := ConfigFromEnv(config.FromMap(env)); err != nil || c.KeyMaxStaleness != 5*time.Minute {
		t.Fatalf("KEY_CACHE_MAX_STALENESS must default to 5m: %s, %v", c.KeyMaxStaleness, err)
	}
	for v, ok := range map[string]bool{"30s": true, "9s": false, "2h": false, "soon": false} {
		env["KEY_CACHE_MAX_STALENESS"] = v
		c, err := ConfigFromEnv(config.FromMap(env))
		if ok && (err != nil || c.KeyMaxStaleness != 30*time.Second) {
			t.Errorf("KEY_CACHE_MAX_STALENESS=%s: %s, %v", v, c.KeyMaxStaleness, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "KEY_CACHE_MAX_STALENESS")) {
			t.Errorf("KEY_CACHE_MAX_STALENESS=%s must be refused (10s to 1h), got %v", v, err)
		}
	}
}
