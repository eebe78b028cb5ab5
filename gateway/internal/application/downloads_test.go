package application

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/gateway/internal/proxy"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

// slowFileSize is what a download of slowAssets sends: 1 KiB per tick, so about 20 s
// unless released, far longer than any test waits.
const slowFileSize = 1 << 20

// slowAssets is a fake assets service. A download starts at once, then sends 1 KiB every
// 20 ms, as a slow reader holds one open, until released (then the rest at once), or it
// ends early by token: "fast…" streams at once, "gone…" is a 403, "die…" breaks off.
// Uploads are answered at once.
type slowAssets struct {
	srv       *httptest.Server
	streaming atomic.Int32 // downloads being sent now
	released  chan struct{}
	release   func()
}

func newSlowAssets(t *testing.T) *slowAssets {
	s := &slowAssets{released: make(chan struct{})}
	var once sync.Once
	s.release = func() { once.Do(func() { close(s.released) }) }
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		token, isFile := strings.CutPrefix(r.URL.Path, "/files/")
		switch {
		case r.URL.Path == "/readyz":
			return
		case !isFile:
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"uploaded":true}`)
			return
		case strings.HasPrefix(token, "gone"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"code":"FORBIDDEN"}`)
			return
		}
		s.streaming.Add(1)
		defer s.streaming.Add(-1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(slowFileSize))
		if r.Method == http.MethodHead {
			return
		}
		chunk := make([]byte, 1024)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for sent := 0; sent < slowFileSize; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if strings.HasPrefix(token, "die") && sent > 8<<10 {
				panic(http.ErrAbortHandler) // the connection is cut mid-body
			}
			if strings.HasPrefix(token, "fast") {
				continue
			}
			select {
			case <-s.released:
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(s.release) // before Close, which waits for the handlers
	return s
}

// download is one client's download, answered (or failed) when answered is closed.
type download struct {
	status   int
	header   http.Header
	body     string // of an answer other than 200
	err      error
	got      int64 // bytes of a 200 read so far
	done     chan struct{}
	answered chan struct{}
}

// startDownload GETs path from the gateway on a connection of its own, from the local
// address from (nil: any), with extra headers; a 200's body is read to the end in the
// background.
func startDownload(ctx context.Context, g *gw, path string, from net.Addr, header ...string) *download {
	d := &download{done: make(chan struct{}), answered: make(chan struct{})}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: from}).DialContext}
	req, _ := http.NewRequestWithContext(ctx, "GET", g.public+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	go func() {
		defer close(d.done)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			d.err = err
			close(d.answered)
			return
		}
		d.status, d.header = resp.StatusCode, resp.Header
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			d.body = string(b)
			resp.Body.Close()
			close(d.answered)
			return
		}
		close(d.answered)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			atomic.AddInt64(&d.got, int64(n))
			if err != nil {
				break
			}
		}
		resp.Body.Close()
	}()
	return d
}

func statuses(ds []*download) map[int]int {
	out := map[int]int{}
	for _, d := range ds {
		<-d.answered
		out[d.status]++
	}
	return out
}

// check429 checks a refused download: 429 in the envelope (RATE_LIMITED), with
// Retry-After, as the document says.
func check429(t *testing.T, d *download, want string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://contract.test/v0/asset_files/tok", nil)
	if err := contract.Check(req, d.status, d.header, []byte(d.body)); err != nil {
		t.Errorf("a refused download must be the documented 429: %v", err)
	}
	if d.status != 429 || d.header.Get("Retry-After") != "1" || !strings.Contains(d.body, `"code":"RATE_LIMITED"`) ||
		!strings.Contains(d.body, want) {
		t.Errorf("a refused download must be 429 RATE_LIMITED with Retry-After and say why (%q): %d %v %s",
			want, d.status, d.header, d.body)
	}
}

// waitHeld waits until the gateway holds no download counters: every slot came back.
func waitHeld(t *testing.T, g *gw, what string) {
	t.Helper()
	testwait.For(t, 10*time.Second, what+": no download counter held (every ended download must give its slots back "+
		"and entries must be removed when their count returns to zero)", func() (bool, string) {
		links, clients := g.app.downloads.Held()
		return links == 0 && clients == 0, fmt.Sprintf("%d links and %d client addresses held", links, clients)
	})
}

func uploadThrough(t *testing.T, g *gw, key string) (int, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.public+"/v0/assets", strings.NewReader("--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.Header.Set("x-api-key", key)
	start := time.Now()
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// 24 slow downloads of one link at once: the first 4 (the cap per link) stream, the other
// 20 get 429 at once, without reaching the service. Meanwhile an upload through the
// gateway goes through promptly. Without the cap every download took a connection of the
// pool that uploads shared, until it was exhausted: the upload then waited for a free
// connection and got 503.
func TestSlowDownloadsOfOneLinkAreCappedAndUploadsFlow(t *testing.T) {
	up := newSlowAssets(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.MaxConns = 8
		c.Proxy.TransferTimeout = 30 * time.Second
		c.Downloads = proxy.DownloadLimits{PerToken: 4, PerClient: 1000}
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ds []*download
	for range 24 {
		ds = append(ds, startDownload(ctx, g, "/v0/asset_files/tok", nil))
	}
	got := statuses(ds)
	t.Logf("24 downloads of one link: statuses %v, %d streaming at the service", got, up.streaming.Load())
	if got[200] != 4 || got[429] != 20 || up.streaming.Load() != 4 {
		t.Errorf("with at most 4 downloads per link, 4 must stream and 20 get 429; got %v, %d streaming", got, up.streaming.Load())
	}
	for _, d := range ds {
		if d.status != 200 {
			check429(t, d, "this link")
			break
		}
	}
	status, took := uploadThrough(t, g, key)
	t.Logf("upload during the slow downloads: %d in %s", status, took.Round(time.Millisecond))
	if status != 200 {
		t.Errorf("an upload during slow downloads of one link got %d after %s: downloads must not take the connections uploads need",
			status, took.Round(time.Millisecond))
	}
	up.release()
	for _, d := range ds {
		<-d.done
		if d.status == 200 && atomic.LoadInt64(&d.got) != slowFileSize {
			t.Errorf("an admitted download ended after %d of %d bytes", d.got, slowFileSize)
		}
	}
	waitHeld(t, g, "after the downloads completed")
}

// The download pool is separate: slow downloads of many links (each within its cap) can
// exhaust it, and then get 503 themselves, but uploads have a pool of their own. Before,
// downloads and uploads shared one, and the upload got 503 too.
func TestDownloadPoolIsSeparateFromUploads(t *testing.T) {
	up := newSlowAssets(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.MaxConns = 4
		c.Proxy.TransferTimeout = 30 * time.Second
		c.Downloads = proxy.DownloadLimits{PerToken: 1000, PerClient: 1000}
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ds []*download
	for i := range 10 {
		ds = append(ds, startDownload(ctx, g, fmt.Sprint("/v0/asset_files/tok", i), nil))
	}
	got := statuses(ds)
	t.Logf("10 slow downloads over a pool of 4: statuses %v", got)
	if got[200] != 4 || got[503] != 6 {
		t.Errorf("10 downloads over a download pool of 4 connections: want 4 streaming and 6 answered 503, got %v", got)
	}
	status, took := uploadThrough(t, g, key)
	t.Logf("upload with the download pool exhausted: %d in %s", status, took.Round(time.Millisecond))
	if status != 200 {
		t.Errorf("an upload with the download pool exhausted got %d after %s: uploads must have a pool of their own",
			status, took.Round(time.Millisecond))
	}
	up.release()
	for _, d := range ds {
		<-d.done
	}
	waitHeld(t, g, "after the downloads completed")
}

// Downloads are counted per client address, the connection's own: 3 slow downloads of
// different links from 127.0.0.1 leave none for a fourth, whatever X-Forwarded-For
// claims, while a client at 127.0.0.2 is not affected.
func TestDownloadsPerClientAddress(t *testing.T) {
	up := newSlowAssets(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.TransferTimeout = 30 * time.Second
		c.Downloads = proxy.DownloadLimits{PerToken: 100, PerClient: 3}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ds []*download
	for i := range 3 {
		ds = append(ds, startDownload(ctx, g, fmt.Sprint("/v0/asset_files/a", i), nil))
	}
	if got := statuses(ds); got[200] != 3 {
		t.Fatalf("3 downloads within the cap of 3 per client: %v", got)
	}
	fourth := startDownload(ctx, g, "/v0/asset_files/a3", nil, "X-Forwarded-For", "203.0.113.9")
	<-fourth.answered
	check429(t, fourth, "your address")
	other := startDownload(ctx, g, "/v0/asset_files/b0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)})
	<-other.answered
	if other.err != nil {
		t.Logf("no second local address here (%v): the other client's part is skipped", other.err)
	} else if other.status != 200 {
		t.Errorf("a client at another address must have its own cap: %d %s", other.status, other.body)
	}
	if links, clients := g.app.downloads.Held(); links != 3+btoi(other.status == 200) || clients != 1+btoi(other.status == 200) {
		t.Errorf("held: %d links, %d clients", links, clients)
	}
	up.release()
	for _, d := range append(ds, fourth, other) {
		<-d.done
	}
	waitHeld(t, g, "after the downloads completed")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every way a download ends gives its slots back, so the counters cannot leak: read to
// the end, HEAD, an error answer from the service, the service breaking off, and above
// all the client going away in the middle (a slow reader that gives up). Then the cap is
// whole again.
func TestDownloadSlotsComeBackHoweverDownloadsEnd(t *testing.T) {
	up := newSlowAssets(t)
	g := start(t, pgtest.NewDatabase(t), map[string]string{"assets": up.srv.URL}, func(c *Config) {
		c.Proxy.TransferTimeout = 30 * time.Second
		c.Downloads = proxy.DownloadLimits{PerToken: 2, PerClient: 3}
	})
	ctx := context.Background()
	for _, path := range []string{"/v0/asset_files/fast", "/v0/asset_files/gone", "/v0/asset_files/die"} {
		d := startDownload(ctx, g, path, nil)
		<-d.done
		t.Logf("%s: %d, %d bytes, %v", path, d.status, d.got, d.err)
		waitHeld(t, g, path)
	}
	head, err := http.Head(g.public + "/v0/asset_files/fast")
	if err != nil || head.StatusCode != 200 {
		t.Fatalf("HEAD: %v %v", head, err)
	}
	head.Body.Close()
	waitHeld(t, g, "HEAD")

	// Two slow readers take the link's two slots; they give up mid-body.
	cctx, cancel := context.WithCancel(ctx)
	a, b := startDownload(cctx, g, "/v0/asset_files/slow", nil), startDownload(cctx, g, "/v0/asset_files/slow", nil)
	if got := statuses([]*download{a, b}); got[200] != 2 {
		t.Fatalf("two downloads within the cap: %v", got)
	}
	testwait.For(t, 10*time.Second, "the two admitted downloads to start streaming", func() (bool, string) {
		na, nb := atomic.LoadInt64(&a.got), atomic.LoadInt64(&b.got)
		return na > 0 && nb > 0, fmt.Sprintf("%d and %d bytes received", na, nb)
	})
	if links, clients := g.app.downloads.Held(); links != 1 || clients != 1 {
		t.Fatalf("while two downloads of one link stream from one client, held %d links and %d clients, want 1 and 1", links, clients)
	}
	third := startDownload(ctx, g, "/v0/asset_files/slow", nil)
	<-third.answered
	check429(t, third, "this link")
	cancel() // the clients close their connections mid-body
	<-a.done
	<-b.done
	waitHeld(t, g, "after the clients went away mid-download")
	testwait.For(t, 10*time.Second, "the service to stop sending the downloads whose clients went away "+
		"(the gateway must close their upstream connections)", func() (bool, string) {
		n := up.streaming.Load()
		return n == 0, fmt.Sprintf("%d downloads still sent", n)
	})

	// The cap is whole again.
	c, d := startDownload(ctx, g, "/v0/asset_files/slow", nil), startDownload(ctx, g, "/v0/asset_files/slow", nil)
	if got := statuses([]*download{c, d}); got[200] != 2 {
		t.Fatalf("after the slots came back, two downloads of the link must be admitted again: %v", got)
	}
	up.release()
	<-c.done
	<-d.done
	waitHeld(t, g, "at the end")
}

// The download settings: defaults, their own pools as large as UPSTREAM_MAX_CONNS unless
// set, and values refused with the variable named.
func TestDownloadSettings(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_TOKEN": adminToken,
		"KEY_HASH_PEPPER": strings.Repeat("p", 32), "UPSTREAM_MAX_CONNS": "100",
		"INTERNAL_AUTH_SECRET": strings.Repeat("s", 32)}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := ConfigFromEnv(config.FromMap(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.Downloads != (proxy.DownloadLimits{PerToken: 8, PerClient: 32}) || c.Proxy.UploadMaxConns != 100 || c.Proxy.DownloadMaxConns != 100 {
		t.Fatalf("defaults: %+v, pools %d/%d", c.Downloads, c.Proxy.UploadMaxConns, c.Proxy.DownloadMaxConns)
	}
	c, err = ConfigFromEnv(config.FromMap(with("DOWNLOAD_MAX_PER_TOKEN", "2", "DOWNLOAD_MAX_PER_CLIENT", "0",
		"UPSTREAM_UPLOAD_MAX_CONNS", "10", "UPSTREAM_DOWNLOAD_MAX_CONNS", "20")))
	if err != nil || c.Downloads != (proxy.DownloadLimits{PerToken: 2}) || c.Proxy.UploadMaxConns != 10 || c.Proxy.DownloadMaxConns != 20 {
		t.Fatalf("set: %+v, pools %d/%d, %v", c.Downloads, c.Proxy.UploadMaxConns, c.Proxy.DownloadMaxConns, err)
	}
	for _, kv := range [][2]string{{"DOWNLOAD_MAX_PER_TOKEN", "0"}, {"DOWNLOAD_MAX_PER_CLIENT", "-1"},
		{"UPSTREAM_UPLOAD_MAX_CONNS", "0"}, {"UPSTREAM_DOWNLOAD_MAX_CONNS", "-5"}, {"DOWNLOAD_MAX_PER_TOKEN", "many"}} {
		if _, err := ConfigFromEnv(config.FromMap(with(kv[0], kv[1]))); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: %v, want an error naming it", kv[0], kv[1], err)
		}
	}
}
