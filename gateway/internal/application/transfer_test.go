package application

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// sink is a fake assets service: uploads are hashed as they arrive, /files/{token}
// streams size bytes of a deterministic pattern.
type sink struct {
	srv  *httptest.Server
	hits atomic.Int32
	size int
}

func newSink(t *testing.T, size int) *sink {
	s := &sink{size: size}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		s.hits.Add(1)
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		if strings.HasPrefix(r.URL.Path, "/files/") {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(s.size))
			w.Header().Set("X-Seen-Path", r.URL.RequestURI())
			w.Header().Set("X-Seen-Tenant", r.Header.Get("X-Internal-Tenant-Id"))
			w.Header().Set("X-Seen-Key", r.Header.Get("X-Api-Key")+r.Header.Get("X-Internal-Key-Id"))
			w.Header().Set("X-Seen-Signature", r.Header.Get("X-Internal-Signature"))
			if r.Method == "HEAD" {
				return
			}
			_, _ = io.Copy(w, pattern(s.size))
			return
		}
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "size": n, "sha256": hex.EncodeToString(h.Sum(nil)),
			"error": fmt.Sprint(err), "tenant": r.Header.Get("X-Internal-Tenant-Id"), "apiKey": r.Header.Get("X-Api-Key"),
			"expect": r.Header.Get("Expect")})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// pattern streams n pseudo-random bytes from one reused buffer.
func pattern(n int) io.Reader {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 64<<10)
	left := n
	return readerFunc(func(p []byte) (int, error) {
		if left == 0 {
			return 0, io.EOF
		}
		m := min(len(p), len(buf), left)
		for i := 0; i < m; i++ {
			buf[i] = byte(rng.Uint32())
		}
		copy(p, buf[:m])
		left -= m
		return m, nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func digest(r io.Reader) (string, int64) {
	h := sha256.New()
	n, _ := io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil)), n
}

// allocated runs fn and returns the bytes the whole process allocated meanwhile.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 40 MiB upload streams through the gateway, with a known length or chunked: the
// service gets every byte (and the tenant, not the key), and the gateway does not
// buffer the body (the process allocates a fraction of its size).
func TestUploadsStreamThrough(t *testing.T) {
	up := newSink(t, 0)
	// The whole 40 MiB must pass within the transfer timeout, also on a loaded machine
	// (the tests' default is the 1 s of ordinary requests).
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.TransferTimeout = 30 * time.Second
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	const size = 40 << 20
	want, _ := digest(pattern(size))
	for _, chunked := range []bool{false, true} {
		var resp *http.Response
		var err error
		alloc := allocated(func() {
			body := pattern(size)
			if chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, _ := http.NewRequest("POST", g.public+"/v0/assets", body)
			if !chunked {
				req.ContentLength = size
			}
			req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			req.Header.Set("x-api-key", key)
			req.Header.Set("Expect", "100-continue")
			resp, err = http.DefaultClient.Do(req) //nolint:bodyclose // closed once the allocation is measured
		})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		t.Logf("chunked=%v: 40 MiB upload, %.1f MiB allocated in the process", chunked, float64(alloc)/(1<<20))
		if resp.StatusCode != 200 || got["size"] != float64(size) || got["sha256"] != want || got["tenant"] != "acme" ||
			got["apiKey"] != "" || got["expect"] != "" {
			t.Fatalf("chunked=%v: %d %v", chunked, resp.StatusCode, got)
		}
		if alloc > size/8 {
			t.Fatalf("chunked=%v: %d bytes allocated for a %d-byte upload: the body was buffered", chunked, alloc, size)
		}
	}
}

func TestUploadLimitAtTheGateway(t *testing.T) {
	up := newSink(t, 0)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) { c.Proxy.MaxUploadBytes = 1 << 20 })
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key).With("Content-Type", "multipart/form-data; boundary=x")
	// A declared length over the limit (1 MiB file + 1 MiB overhead) never reaches the service.
	r := c.Do("POST", "/v0/assets", apitest.Raw(strings.Repeat("x", 2<<20+1)))
	if r.Status != 400 || code(t, r) != "VALIDATION_ERROR" || up.hits.Load() != 0 {
		t.Fatalf("declared oversize: %s (service hits %d)", r, up.hits.Load())
	}
	// A chunked body is cut off at the limit.
	req, _ := http.NewRequest("POST", g.public+"/v0/assets", io.MultiReader(pattern(3<<20)))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "too_big") {
		t.Fatalf("chunked oversize: %d %s", resp.StatusCode, body)
	}
	// Within the limit it goes through.
	c.Contract = nil
	if r := c.Do("POST", "/v0/assets", apitest.Raw(strings.Repeat("x", 1<<20))); r.Status != 200 || r.Map()["size"] != float64(1<<20) {
		t.Fatalf("upload within the limit: %s", r)
	}
}

// Only upload routes stream: every other body keeps the 1 MiB limit, chunked or not,
// multipart or not, and a small chunked body arrives whole.
func TestOtherRoutesKeepTheJSONLimit(t *testing.T) {
	up := newSink(t, 0)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL, "topics": up.srv.URL})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	send := func(path, ct string, body io.Reader) (int, string) {
		req, _ := http.NewRequest("POST", g.public+path, body)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	big := bytes.Repeat([]byte("a"), 1<<20+1)
	for name, tc := range map[string]struct {
		path, ct string
		body     io.Reader
	}{
		"chunked json":             {"/v0/topics", "application/json", io.MultiReader(bytes.NewReader(big))},
		"multipart elsewhere":      {"/v0/topics", "multipart/form-data; boundary=x", bytes.NewReader(big)},
		"json to the upload route": {"/v0/assets/asset_1/trash", "application/json", bytes.NewReader(big)},
	} {
		if status, body := send(tc.path, tc.ct, tc.body); status != 400 || !strings.Contains(body, "too_big") {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	if up.hits.Load() != 0 {
		t.Fatal("an oversized body reached a service")
	}
	small := `{"title":"chunked but small"}`
	status, body := send("/v0/topics", "application/json", io.MultiReader(strings.NewReader(small)))
	want, _ := digest(strings.NewReader(small))
	if status != 200 || !strings.Contains(body, want) {
		t.Fatalf("small chunked body: %d %s", status, body)
	}
}

// Signed downloads are served without a key, streamed (not buffered), with no tenant
// or key forwarded; nothing else under the path, and no other path, becomes public.
func TestSignedDownloadsArePublicAndStream(t *testing.T) {
	const size = 40 << 20
	up := newSink(t, size)
	// The whole 40 MiB must pass within the transfer timeout, also on a loaded machine
	// (the tests' default is the 1 s of ordinary requests).
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.TransferTimeout = 30 * time.Second
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	want, _ := digest(pattern(size))
	var resp *http.Response
	var sum string
	var n int64
	alloc := allocated(func() {
		req, _ := http.NewRequest("GET", g.public+"/v0/asset_files/tok.en_1-x?ignored=1", nil)
		req.Header.Set("X-Internal-Tenant-Id", "evil")
		var err error
		if resp, err = http.DefaultClient.Do(req); err != nil { //nolint:bodyclose // closed once the allocation is measured
			t.Fatal(err)
		}
		sum, n = digest(resp.Body)
		resp.Body.Close()
	})
	t.Logf("40 MiB download: %.1f MiB allocated in the process", float64(alloc)/(1<<20))
	if resp.StatusCode != 200 || sum != want || n != size || resp.Header.Get("X-Seen-Path") != "/files/tok.en_1-x" ||
		resp.Header.Get("X-Seen-Tenant") != "" || resp.Header.Get("X-Seen-Key") != "" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("download: %d %v (%d bytes)", resp.StatusCode, resp.Header, n)
	}
	// Signed, with no tenant: the assets service refuses downloads the gateway did not send.
	checkSigned(t, map[string]string{"X-Request-Id": resp.Header.Get("X-Request-Id"),
		"X-Internal-Signature": resp.Header.Get("X-Seen-Signature")})
	if alloc > size/8 {
		t.Fatalf("%d bytes allocated for a %d-byte download: the body was buffered", alloc, size)
	}
	head, err := http.Head(g.public + "/v0/asset_files/tok")
	if err != nil || head.StatusCode != 200 || head.ContentLength != size {
		t.Fatalf("HEAD: %v %v", head, err)
	}
	head.Body.Close()
	{ // A key sent along is not forwarded either.
		req, _ := http.NewRequest("GET", g.public+"/v0/asset_files/tok", nil)
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Seen-Key") != "" || resp.Header.Get("X-Seen-Tenant") != "" {
			t.Fatalf("key or tenant forwarded on a download: %v", resp.Header)
		}
	}
	hits := up.hits.Load()
	anon := g.client(t, "")
	for _, tc := range []struct{ method, path string }{
		{"POST", "/v0/asset_files/tok"},
		{"DELETE", "/v0/asset_files/tok"},
		{"GET", "/v0/asset_files/a/b"},
		{"GET", "/v0/asset_files"},
		{"GET", "/v0/assets"},
		{"GET", "/v0/assets/asset_1"},
		{"POST", "/v0/assets"},
		{"GET", "/files/tok"},
	} {
		if r := anon.Do(tc.method, tc.path, nil); r.Status != 401 {
			t.Errorf("%s %s without a key: %s", tc.method, tc.path, r)
		}
	}
	if up.hits.Load() != hits {
		t.Fatal("an unauthenticated request other than a download reached the service")
	}
	// With a key, the rest of /v0/assets routes as before (with the tenant).
	c := g.client(t, key)
	c.Contract = nil
	if r := c.Do("GET", "/v0/assets/asset_1", nil); r.Status != 200 || r.Map()["tenant"] != "acme" || r.Map()["path"] != "/v0/assets/asset_1" {
		t.Fatalf("authenticated route: %s", r)
	}
	if r := c.Do("GET", "/v0/asset_files/a/b", nil); r.Status != 404 {
		t.Fatalf("no authenticated route under the download prefix: %s", r)
	}
}

func TestDownloadsWithoutTheAssetsService(t *testing.T) {
	g := start(t, pgtest.NewDatabase(t), nil)
	r := g.client(t, "").Do("GET", "/v0/asset_files/tok", nil)
	if r.Status != 503 || code(t, r) != "SERVICE_UNAVAILABLE" {
		t.Fatalf("no assets service: %s", r)
	}
	req, _ := http.NewRequest("GET", g.public+"/v0/asset_files/tok", strings.NewReader("body"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("download with a body: %d", resp.StatusCode)
	}
}
