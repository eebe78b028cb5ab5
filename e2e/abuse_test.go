package e2e

// The attacks of a hostile caller (or a careless one) against the whole system started
// as processes: each must fail to hurt the platform or any other tenant. docs/security.md
// lists the threats and the limits that stop them.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
)

// Compressed bodies are refused with 415, not inflated: a 2.6 KB body that was 1 GiB of
// zeros gzipped twice used to grow the topics process to 2.95 GB. Sent through the
// gateway and straight to the service, it must leave the service's memory as it was.
func TestAbuseCompressedBodyIsRefused(t *testing.T) {
	s := local(t)
	bomb := doubleGzippedZeros(t, 512<<20)
	pid := s.PID("topics")
	before := rssBytes(t, pid)
	peak := watchPeakRSS(t, pid)
	c := api(t, newKey(t, nil))
	direct := &apitest.Client{T: t, Base: s.ServiceURL("topics")}
	for _, target := range []struct {
		name string
		c    *apitest.Client
	}{{"through the gateway", c}, {"straight to the service", direct}} {
		for _, enc := range []string{"gzip, gzip", "gzip", "deflate", "br"} {
			r := target.c.With("Content-Encoding", enc).Do("POST", "/v0/topics", apitest.Raw(bomb))
			if r.Status != 415 || r.Map()["code"] != "VALIDATION_ERROR" {
				t.Fatalf("%s, Content-Encoding %q: want 415 VALIDATION_ERROR, got %s", target.name, enc, r)
			}
		}
	}
	if grew := peak() - before; grew > 50<<20 {
		t.Fatalf("the topics service grew by %d MB during the attack (limit 50 MB)", grew>>20)
	}
	// The service still serves.
	must(t, c.Do("POST", "/v0/topics", map[string]any{"title": "after the bomb"}), 201)
}

// Credentials that disagree are refused: a valid key beside another tenant's, or beside
// garbage, in two x-api-key headers, is 401 on every operation.
func TestAbuseDisagreeingKeysAreRefused(t *testing.T) {
	keyA, keyB := newKey(t, nil), newKey(t, nil)
	for _, tc := range []struct {
		name string
		keys []string
	}{{"A then B", []string{keyA, keyB}}, {"B then A", []string{keyB, keyA}}, {"A then garbage", []string{keyA, "garbage"}}} {
		for _, op := range []struct{ method, path string }{{"GET", "/v0/topics"}, {"POST", "/v0/topics"}, {"GET", "/v0/pages"}, {"GET", "/v0/persons"}} {
			req, _ := http.NewRequest(op.method, sys.base+op.path, strings.NewReader(`{"title":"x"}`))
			req.Header.Set("Content-Type", "application/json")
			for _, k := range tc.keys {
				req.Header.Add("x-api-key", k)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("%s %s with keys %s: status %d, want 401 (disagreeing credentials)", op.method, op.path, tc.name, resp.StatusCode)
			}
		}
	}
}

// The gateway's /readyz is public: 100 calls leave the number of connections to the
// broker as it was (each used to add connections through every service's broker check),
// and a caller without the admin token learns which check fails but not its error text.
func TestAbuseReadyzIsCheapAndDiscreet(t *testing.T) {
	s := local(t)
	port := brokerPort(t, s.Brokers())
	readyz := func(token string) (int, string) {
		header := map[string]string{}
		if token != "" {
			header["Authorization"] = "Bearer " + token
		}
		return direct(t, "GET", sys.base+"/readyz", header)
	}
	readyz("")
	before := brokerConns(t, port)
	for range 100 {
		readyz("")
		time.Sleep(20 * time.Millisecond) // pacing, over two seconds: several fresh runs of the checks
	}
	if after := brokerConns(t, port); after > before+5 || after < before-5 {
		t.Fatalf("100 public /readyz calls changed the broker connections from %d to %d (allowed ±5)", before, after)
	}

	s.Kill("persons")
	defer func() {
		if err := s.Restart(context.Background(), "persons"); err != nil {
			t.Fatal(err)
		}
	}()
	testwait.For(t, 10*time.Second, "the gateway's /readyz to answer 503 with persons killed", func() (bool, string) {
		st, body := readyz("")
		return st == 503, fmt.Sprintf("%d %s", st, clip(body, 200))
	})
	_, public := readyz("")
	if !strings.Contains(public, `"details":{"persons":"failing"}`) || strings.Contains(public, "dial") || strings.Contains(public, "connection refused") {
		t.Fatalf("/readyz without the admin token must name the failing check and nothing more: %s", public)
	}
	if _, operator := readyz(sys.adminToken); !strings.Contains(operator, "persons:") {
		t.Fatalf("/readyz with the admin token must show the failure's text: %s", operator)
	}
}

// Writes while PostgreSQL crashes and comes back (postmaster SIGKILLed under 16 writers,
// restarted once every writer has met the outage) answer 201 or 503 in the envelope,
// never 500, and every acknowledged write survives.
func TestAbuseDatabaseRestartAnswers503(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, map[string]any{"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}}))
	c.HTTP = &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var acked []string
	statuses := map[int]int{}
	var bad []string
	var killed bool
	var met [16]bool // the writers that got a 503 since the kill
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				//nolint:contextcheck // the client's calls take no context: the loop checks ctx between them
				r, err := c.Try("POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("w%d-%d", w, i)})
				mu.Lock()
				switch {
				case err != nil && r == nil:
					bad = append(bad, err.Error())
				case err != nil: // the answer broke the contract (an envelope, say)
					bad = append(bad, err.Error())
				default:
					statuses[r.Status]++
					if r.Status == 201 {
						acked = append(acked, r.Map()["topicId"].(string))
					} else if r.Status != 503 {
						bad = append(bad, r.String())
					}
					if r.Status == 503 && killed {
						met[w] = true
					}
				}
				mu.Unlock()
				if r != nil && r.Status == 503 {
					time.Sleep(20 * time.Millisecond) // pacing: as a client honouring Retry-After would, sooner
				}
			}
		}()
	}
	defer wg.Wait() // after cancel (deferred last: it runs first) when a wait below fails the test
	defer cancel()
	count := func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked), fmt.Sprintf("answers %v", statuses)
	}
	acks := func(n int) func() (bool, string) {
		return func() (bool, string) { got, state := count(); return got >= n, state }
	}
	testwait.For(t, 20*time.Second, "50 acknowledged writes before the crash", acks(50))
	mu.Lock()
	killed = true
	mu.Unlock()
	if err := s.KillPostgres(); err != nil {
		t.Fatal(err)
	}
	// The outage lasts until every writer has met it.
	testwait.For(t, 20*time.Second, "every writer to get a 503 from the outage", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range met {
			if m {
				n++
			}
		}
		return n == len(met), fmt.Sprintf("%d of %d writers got a 503; answers %v", n, len(met), statuses)
	})
	restartCtx, restartCancel := context.WithTimeout(context.Background(), time.Minute)
	defer restartCancel()
	if err := s.StartPostgres(restartCtx); err != nil {
		cancel()
		wg.Wait()
		t.Fatal(err)
	}
	atRestart, _ := count()
	testwait.For(t, 30*time.Second, "50 more acknowledged writes after the restart", acks(atRestart+50))
	cancel()
	wg.Wait()

	t.Logf("answers during the outage: %v", statuses)
	if statuses[503] == 0 {
		t.Fatalf("no write met the outage (answers %v): the test proves nothing", statuses)
	}
	for i, b := range bad {
		if i == 5 {
			t.Fatalf("... %d answers in all were neither 201 nor 503 in the envelope", len(bad))
		}
		t.Errorf("during a database restart every answer must be 201 or 503 in the envelope, got: %s", b)
	}
	for _, id := range acked {
		must(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	}
	// Every process of the stack lived through it, and the platform is ready again.
	testwait.For(t, 30*time.Second, "the gateway's /readyz to answer 200 again", func() (bool, string) {
		resp, err := http.Get(sys.base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// An event too large for the broker cannot stall the pipeline: a session whose form
// field is 200,000 "<" characters (about 1.2 MB once JSON-escaped in form.submitted) is
// refused with 400, and the events of every tenant keep flowing (the relay used to retry
// the refused batch forever, and no later event of any tenant reached webhooks).
func TestAbuseOversizedEventIsRefused(t *testing.T) {
	s := local(t)
	attacker := api(t, newKey(t, nil))
	pageID, audienceID := newPageWithAudience(t, attacker)
	started := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	session := func(id, field string) map[string]any {
		return map[string]any{
			"analyticsSessionId": id, "audienceId": audienceID, "pageUrl": "https://acme.example/spring",
			"sessionStartedAt": started.Format(time.RFC3339Nano),
			"formSubmission":   map[string]any{"email": "visitor@example.com", "fields": map[string]any{"note": field}},
		}
	}
	// Sent as the attacker would, with the characters unescaped: a 200 KB body.
	var huge bytes.Buffer
	enc := json.NewEncoder(&huge)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(session("abuse-huge", strings.Repeat("<", 200_000))); err != nil {
		t.Fatal(err)
	}
	r := attacker.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", apitest.Raw(huge.String()))
	if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
		t.Fatalf("a session whose event would be 1.2 MB must be refused with 400, got %s", r.String()[:min(300, len(r.String()))])
	}
	// Another tenant's event, written after the attack, reaches the broker.
	victim := api(t, newKey(t, nil))
	vPage, vAudience := newPageWithAudience(t, victim)
	body := session("victim-visit", "hello")
	body["audienceId"] = vAudience
	must(t, victim.Do("POST", "/v0/pages/"+vPage+"/audience_sessions", body), 201)
	readPagesEvent(t, s.Brokers(), vAudience, events.TypeFormSubmitted)
}

// A 1 MB body of a hundred thousand invalid items gets an answer of a few kilobytes:
// at most 100 issues listed, the rest counted.
func TestAbuseValidationErrorIsSmall(t *testing.T) {
	c := api(t, newKey(t, nil))
	var b strings.Builder
	b.WriteString(`{"title":"x"`)
	n := 0
	for b.Len() < 1<<20-64 {
		fmt.Fprintf(&b, `,"k%d":1`, n)
		n++
	}
	b.WriteString("}")
	r := c.Do("POST", "/v0/topics", apitest.Raw(b.String()))
	if r.Status != 400 {
		t.Fatalf("a body of %d unknown fields: %s", n, r.String()[:200])
	}
	if len(r.Body) > 32<<10 {
		t.Fatalf("the error answer to %d issues is %d bytes; it must stay small", n, len(r.Body))
	}
	env := decode[apitypes.ErrorEnvelope](t, r, 400)
	var parts apitypes.ErrorEnvelopeDetails0
	if env.Details != nil {
		parts, _ = env.Details.AsErrorEnvelopeDetails0()
	}
	if len(parts) != 1 {
		t.Fatalf("validation details %s, want one part", r.Body[:200])
	}
	if got := len(parts[0].Issues); got != 100 {
		t.Fatalf("listed %d issues, want the first 100", got)
	}
	if o := parts[0].OmittedIssues; o == nil || *o != n-100 {
		t.Fatalf("omittedIssues = %v, want %d", o, n-100)
	}
}

// doubleGzippedZeros is size zero bytes gzipped twice (a few kilobytes).
func doubleGzippedZeros(t *testing.T, size int) string {
	t.Helper()
	var inner bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&inner, gzip.BestCompression)
	chunk := make([]byte, 1<<20)
	for written := 0; written < size; written += len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var outer bytes.Buffer
	zw, _ = gzip.NewWriterLevel(&outer, gzip.BestCompression)
	_, _ = zw.Write(inner.Bytes())
	_ = zw.Close()
	return outer.String()
}

// rssBytes is a process's resident memory.
func rssBytes(t *testing.T, pid int) int {
	t.Helper()
	rss, err := readRSS(pid)
	if err != nil {
		t.Fatalf("read the memory of process %d: %v", pid, err)
	}
	return rss
}

// readRSS reads VmRSS from /proc/<pid>/status, in bytes.
func readRSS(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// watchPeakRSS samples a process's resident memory every 5 ms until the returned
// function is called, which stops sampling and returns the peak.
func watchPeakRSS(t *testing.T, pid int) func() int {
	t.Helper()
	peak := rssBytes(t, pid)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if rss, err := readRSS(pid); err == nil {
				peak = max(peak, rss)
			}
		}
	}()
	return func() int { close(stop); <-done; return peak }
}

// brokerPort is the port of the first broker address.
func brokerPort(t *testing.T, brokers []string) int {
	t.Helper()
	_, p, ok := strings.Cut(brokers[0], ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		t.Fatalf("broker address %q has no port", brokers[0])
	}
	return port
}

// brokerConns counts the established connections to the broker's port.
func brokerConns(t *testing.T, port int) int {
	t.Helper()
	n, err := kafkatest.Connections(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A small image that would decode to hundreds of megabytes under the pixel limit (a
// 16-bit PNG of 8000×2000: 122 MiB as RGBA64, from a file of about 130 KB) is stored
// without a preview, and the assets service's memory stays as it was.
func TestAbuseImageThatDecodesHugeGetsNoPreview(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, nil))
	img := zeroPNG16(t, 8000, 2000)
	pid := s.PID("assets")
	before := rssBytes(t, pid)
	peak := watchPeakRSS(t, pid)
	// The preview is made (or not) before the upload answers.
	a := must(t, assetUpload(c, assetFile("huge.png", img), assetField("name", "decode bomb"), assetField("type", "image")), 201)
	if grew := peak() - before; grew > 50<<20 {
		t.Fatalf("the assets service grew by %d MB on a %d KB image (limit 50 MB): it decoded what its budget forbids", grew>>20, len(img)>>10)
	}
	if a["previewDownloadUrl"] != nil {
		t.Fatalf("an image over the decode budget must be stored without a preview: %v", a["previewDownloadUrl"])
	}
}

// Slow readers of one signed link cannot take the platform's connections: past
// DOWNLOAD_MAX_PER_TOKEN (8) downloads of a link at once, the next is 429, an upload
// still goes through at once, and the slots come back when the readers leave.
func TestAbuseSlowDownloadsAreCapped(t *testing.T) {
	c := api(t, newKey(t, nil))
	file := noisePNG(2048, 2048) // 16 MiB that do not compress: more than the socket buffers hold
	a := must(t, assetUpload(c, assetFile("big.png", file), assetField("name", "big"), assetField("type", "image")), 201)
	link := a["downloadUrl"].(string)
	u, _ := url.Parse(link)
	target := strings.TrimRight(sys.base, "/") + u.RequestURI()
	var readers []io.Closer // the bodies of the downloads in flight
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	for i := range 8 {
		// A client that asks and then does not read: its download stays in flight.
		//nolint:bodyclose // left open on purpose; closed through readers
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(target)
		if err != nil {
			t.Fatalf("download %d of the link: %v", i+1, err)
		}
		readers = append(readers, resp.Body) // closed by the deferred function, or once the upload went through
		if resp.StatusCode != 200 {
			t.Fatalf("download %d of the link: %s", i+1, resp.Status)
		}
	}
	r := assetFetch(t, link)
	if r.Status != 429 || r.Map()["code"] != "RATE_LIMITED" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the 9th download at once of one link must be 429 with Retry-After, got %d", r.Status)
	}
	began := time.Now()
	must(t, assetUpload(c, assetFile("meanwhile.png", assetPNG(20, 20)), assetField("name", "meanwhile"), assetField("type", "image")), 201)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("an upload waited %s behind the slow downloads", took)
	}
	for _, r := range readers {
		r.Close()
	}
	readers = nil
	testwait.For(t, 10*time.Second, "the link's download slots to come back (HEAD answers 200)", func() (bool, string) {
		resp, err := http.Head(target)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// zeroPNG16 is a w×h 16-bit RGBA PNG of zeros, written by hand: its IDAT is w×h×8 zero
// bytes deflated, so the file is small however large the image.
func zeroPNG16(t *testing.T, w, h int) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		out.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // bit depth 16, colour type RGBA
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+w*8) // filter byte 0, then the pixels
	for range h {
		_, _ = zw.Write(row)
	}
	_ = zw.Close()
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// noisePNG is a w×h PNG of random pixels, which deflate cannot shrink.
func noisePNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	_ = enc.Encode(&buf, img)
	return buf.Bytes()
}

// One tenant's slow receivers cannot hold every delivery worker: tenant A, with 100
// subscriptions to a receiver that answers after 3 s and a backlog of 2,000 deliveries,
// saturates its share (WEBHOOK_TENANT_CONCURRENCY) while tenant B's deliveries keep a
// p99 under 1 s (A used to take all 256 workers, and B waited for them).
func TestAbuseWebhookTenantCannotStarveOthers(t *testing.T) {
	local(t)
	release := make(chan struct{})
	var inFlight, peak, answered atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer answered.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
		w.WriteHeader(200)
	}))
	defer slow.Close()
	released := false
	drain := func() { // A's receiver answers at once: its backlog drains and leaves the next tests alone
		if !released {
			released = true
			close(release)
			testwait.Eventually(t, 60*time.Second, "tenant A's backlog to drain", func() bool { return answered.Load() >= 2000 })
		}
	}
	defer drain()

	tenantA, a := whTenant(t)
	for range 100 {
		whSubscribe(t, a, map[string]any{"url": slow.URL, "events": []string{"page.version.created"}})
	}
	now := timestamp.Format(time.Now())
	var backlog []events.Envelope
	for i := range 20 {
		backlog = append(backlog, whEvent(t, tenantA, events.TypePageVersionCreated, fmt.Sprintf("audience_a%d", i),
			`"pageId":"page_a","versionId":"version_a","createdAt":"`+now+`"`))
	}
	whPublish(t, backlog...)
	testwait.Eventually(t, 30*time.Second, "tenant A saturating its share", func() bool { return inFlight.Load() >= 32 })

	tenantB, b := whTenant(t)
	fast := newWhReceiver(t, nil)
	whSubscribe(t, b, map[string]any{"url": fast.URL, "events": []string{"page.version.created"}})
	sent := map[string]time.Time{}
	for i := range 20 {
		e := whEvent(t, tenantB, events.TypePageVersionCreated, fmt.Sprintf("audience_b%d", i),
			`"pageId":"page_b","versionId":"version_b","createdAt":"`+timestamp.Format(time.Now())+`"`)
		sent[e.ID] = time.Now()
		whPublish(t, e)
		time.Sleep(50 * time.Millisecond) // pacing: tenant B's events arrive one by one, each timed from its publish
	}
	testwait.Eventually(t, 30*time.Second, "tenant B's 20 deliveries", func() bool { return len(fast.all()) >= 20 })
	var lat []time.Duration
	for _, d := range fast.all() {
		if at, ok := sent[d.parsed.EventID]; ok {
			lat = append(lat, d.at.Sub(at))
		}
	}
	drain()
	slices.Sort(lat)
	p99 := lat[len(lat)*99/100]
	t.Logf("tenant B: %d deliveries, p99 %s, max %s; tenant A: at most %d attempts in flight", len(lat), p99, lat[len(lat)-1], peak.Load())
	if p99 >= time.Second {
		t.Fatalf("tenant B's deliveries waited behind tenant A's slow receivers: p99 %s (limit 1 s)", p99)
	}
	if p := peak.Load(); p > 64 {
		t.Fatalf("tenant A held %d delivery workers at once, over its share of 64", p)
	}
}

// maxAnswerBytes is the documented maximum size of an answer (docs/api.md, "Limits").
const maxAnswerBytes = 4 << 20

// maxGrowthBytes is how much resident memory a process may gain while it serves an
// abusive load.
const maxGrowthBytes = 100 << 20

// unlimitedKey issues a key for a fresh tenant whose rate limit stays out of the way.
func unlimitedKey(t *testing.T) string {
	t.Helper()
	return newKey(t, map[string]any{"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}})
}

// rawJSON is v as JSON with '<', '>' and '&' left as they are: what a client sends.
func rawJSON(t *testing.T, v any) apitest.Raw {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return apitest.Raw(b.String())
}

// boundedAnswer is an answer read up to its limit and one byte more; the rest is counted
// and dropped, so an oversized answer costs the test nothing but reports its size.
type boundedAnswer struct {
	status int
	body   []byte // the first limit+1 bytes
	size   int64  // every byte of the body
	limit  int64  // the documented maximum that applies
	took   time.Duration
}

// over says whether the answer is larger than its documented maximum.
func (a boundedAnswer) over() bool { return a.size > a.limit }

// getBounded GETs path through the gateway with key, reading the answer as boundedAnswer
// says with limit, the documented maximum that applies.
func getBounded(key, path string, limit int64) (boundedAnswer, error) {
	req, err := http.NewRequest("GET", sys.base+path, nil)
	if err != nil {
		return boundedAnswer{}, err
	}
	req.Header.Set("x-api-key", key)
	began := time.Now()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return boundedAnswer{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return boundedAnswer{}, fmt.Errorf("GET %s: read the answer: %w", path, err)
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return boundedAnswer{}, fmt.Errorf("GET %s: read the answer past %d bytes: %w", path, len(body), err)
	}
	return boundedAnswer{status: resp.StatusCode, body: body, size: int64(len(body)) + rest, limit: limit, took: time.Since(began)}, nil
}

// pageOf decodes a list answer: its items and the cursor of the next page ("" at the end).
func pageOf(t *testing.T, path string, a boundedAnswer) (items []map[string]any, next string) {
	t.Helper()
	var page struct {
		Items      []map[string]any `json:"items"`
		HasMore    bool             `json:"hasMore"`
		NextCursor *string          `json:"nextCursor"`
	}
	if a.status != 200 {
		t.Fatalf("GET %s: status %d: %s", path, a.status, clip(string(a.body), 300))
	}
	if err := json.Unmarshal(a.body, &page); err != nil {
		t.Fatalf("GET %s: the answer is not a page: %v", path, err)
	}
	if page.HasMore != (page.NextCursor != nil) {
		t.Fatalf("GET %s: hasMore %v but nextCursor %v: hasMore must be false exactly when nextCursor is null", path, page.HasMore, page.NextCursor)
	}
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return page.Items, next
}

// walkBounded follows a list's cursors from path (which has a query), each page within
// limit, and returns every item; at most pages pages.
func walkBounded(t *testing.T, key, path string, limit int64, pages int) []map[string]any {
	t.Helper()
	var all []map[string]any
	next := ""
	for i := 0; i < pages; i++ {
		p := path
		if next != "" {
			p += "&cursor=" + url.QueryEscape(next)
		}
		a, err := getBounded(key, p, limit)
		if err != nil {
			t.Fatal(err)
		}
		if a.over() {
			t.Fatalf("GET %s (page %d): the answer is %d bytes, over the documented maximum of %d: every answer must be bounded", p, i+1, a.size, a.limit)
		}
		items, cursor := pageOf(t, p, a)
		all = append(all, items...)
		if cursor == "" {
			return all
		}
		if len(items) == 0 {
			t.Fatalf("GET %s (page %d): an empty page with hasMore: a client paging through it never ends", p, i+1)
		}
		next = cursor
	}
	t.Fatalf("GET %s: still more after %d pages", path, pages)
	return nil
}

// processes are the stack's processes whose peak resident memory is watched.
type processes struct {
	t      *testing.T
	names  []string
	before map[string]int
	peaks  map[string]func() int
}

// watchProcesses starts watching the named processes' resident memory.
func watchProcesses(t *testing.T, names ...string) *processes {
	t.Helper()
	s := local(t)
	p := &processes{t: t, names: names, before: map[string]int{}, peaks: map[string]func() int{}}
	for _, n := range names {
		pid := s.PID(n)
		if pid == 0 {
			t.Fatalf("no process %s in the stack", n)
		}
		p.before[n] = rssBytes(t, pid)
		p.peaks[n] = watchPeakRSS(t, pid)
	}
	return p
}

// growth stops watching and returns how much each process grew at its peak, in bytes.
func (p *processes) growth() map[string]int {
	out := map[string]int{}
	for _, n := range p.names {
		if stop := p.peaks[n]; stop != nil {
			out[n] = stop() - p.before[n]
			p.peaks[n] = nil
		}
	}
	return out
}

// check fails the test when a process grew by maxGrowthBytes or more, naming what it served.
func (p *processes) check(what string) {
	p.t.Helper()
	grew := p.growth()
	var over []string
	for _, n := range p.names {
		p.t.Logf("%s: %s grew by %d MB at its peak", what, n, grew[n]>>20)
		if grew[n] >= maxGrowthBytes {
			over = append(over, fmt.Sprintf("%s +%d MB", n, grew[n]>>20))
		}
	}
	if len(over) > 0 {
		p.t.Fatalf("%s: %s (each process must grow by less than %d MB)", what, strings.Join(over, ", "), maxGrowthBytes>>20)
	}
}

// stopOnCleanup makes sure the watchers end with the test, whatever way it ends.
func (p *processes) stopOnCleanup() { p.t.Cleanup(func() { p.growth() }) }

// Amplified reads are bounded: one tenant writes 10 topics of 100 entries of 20,000 '<'
// (each '<' was written as 6 bytes, \u003c: 120 MB an answer), then reads
// GET /v0/topics?limit=100 four times at once. Every answer stays within the documented
// maximum, paging reaches all 10 topics and every entry, and neither the gateway nor
// the topics service grows by 100 MB (topics grew +1.4 GB: its chart limit is 512 Mi).
func TestAbuseAmplifiedTopicListIsBounded(t *testing.T) {
	amplifiedTopicList(t, "<", maxAnswerBytes)
}

// The same with the text JSON writes largest whatever the encoder: control characters,
// 6 bytes each (\u0001). A topic's entries take at most 4 MiB as written, so the entry
// past that is a 409 and every answer stays within the 4 MiB maximum (the topic was a
// 12 MB answer, and four reads grew topics by 142-244 MB).
func TestAbuseAmplifiedTopicListOfControlCharactersIsBounded(t *testing.T) {
	amplifiedTopicList(t, "\x01", maxAnswerBytes)
}

// amplifiedTopicList writes 10 topics of 100 entries of 20,000 times char and reads them
// back as TestAbuseAmplifiedTopicListIsBounded says, each answer within limit.
func amplifiedTopicList(t *testing.T, char string, limit int64) {
	t.Helper()
	local(t)
	key := unlimitedKey(t)
	c := api(t, key)
	const topics, entries = 10, 100
	content := strings.Repeat(char, 20000) // the largest entry the contract allows
	var ids []string
	for i := range topics {
		ids = append(ids, must(t, c.Do("POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("amplified %d", i), "sortOrder": i}), 201)["topicId"].(string))
	}
	entry := rawJSON(t, map[string]any{"content": map[string]any{"type": "html", "content": content}})
	jobs := make(chan string)
	errs := make(chan error, topics*entries)
	var mu sync.Mutex
	held := map[string]int{} // entries each topic took; past its size bound a topic answers 409
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				r, err := c.Try("POST", "/v0/topics/"+id+"/entries", entry)
				switch {
				case err != nil:
				case r.Status == 201:
					mu.Lock()
					held[id]++
					mu.Unlock()
				case r.Status != 409 || r.Map()["code"] != "CONFLICT":
					err = fmt.Errorf("add an entry: %s (want 201, or 409 CONFLICT past the topic's size bound)", clip(r.String(), 300))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	began := time.Now()
	for _, id := range ids {
		for range entries {
			jobs <- id
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("wrote %d entries of %d %q in %s (the first topic took %d)", topics*entries, len(content), char,
		time.Since(began).Round(time.Millisecond), held[ids[0]])

	procs := watchProcesses(t, "gateway", "topics")
	procs.stopOnCleanup()
	for _, a := range readFourBounded(t, key, "/v0/topics?limit=100", limit, procs) {
		pageOf(t, "/v0/topics?limit=100", a)
	}
	procs.check(fmt.Sprintf("four reads of 10 topics x 100 entries of 20,000 %q at once", char))

	// A client pages through everything: every topic, and every entry of a topic.
	seen := map[string]bool{}
	for _, it := range walkBounded(t, key, "/v0/topics?limit=100", limit, 2*topics) {
		seen[it["topicId"].(string)] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("paging through GET /v0/topics?limit=100 reached %d of the %d topics: %s is missing", len(seen), topics, id)
		}
	}
	got := walkBounded(t, key, "/v0/topics/"+ids[0]+"/entries?limit=100", limit, 2*entries)
	if len(got) != held[ids[0]] {
		t.Fatalf("paging through a topic's entries returned %d of its %d entries", len(got), held[ids[0]])
	}
	for _, it := range got {
		if it["content"].(map[string]any)["content"] != content {
			t.Fatalf("an entry read back is not the one written (%d characters)", len(it["content"].(map[string]any)["content"].(string)))
		}
	}
}

// readFourBounded reads path four times at once, each answer within the documented
// maximum. One read goes first: on a build whose answer is unbounded, four at once would
// grow the machine by gigabytes to prove what one shows; that one fails the test with
// its size and what the watched processes grew by.
func readFourBounded(t *testing.T, key, path string, limit int64, procs *processes) []boundedAnswer {
	t.Helper()
	first, err := getBounded(key, path, limit)
	if err != nil {
		t.Fatal(err)
	}
	if first.over() {
		t.Fatalf("GET %s answered %d bytes in %s, over the documented maximum of %d (grew at the peak: %v bytes): every answer must be bounded",
			path, first.size, first.took.Round(time.Millisecond), first.limit, procs.growth())
	}
	answers := make([]boundedAnswer, 4)
	errs := make(chan error, len(answers))
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := getBounded(key, path, limit)
			if err != nil {
				errs <- err
			}
			answers[i] = a
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, a := range answers {
		t.Logf("GET %s, %d of 4 at once: %d, %d bytes in %s", path, i+1, a.status, a.size, a.took.Round(time.Millisecond))
		if a.over() {
			t.Fatalf("GET %s, one of four at once: %d bytes, over the documented maximum of %d: every answer must be bounded", path, a.size, a.limit)
		}
	}
	return answers
}

// An audience's conversation cannot be read as an amplifier: messages of 20,000 '<' that
// each propose 20 changes of 20,000 '<' (every value stored twice, as the change's
// previous and new value, and listed again in pendingChanges: about 9.7 MB of answer per
// 420 KB message) are refused past the documented cap or read back within the
// documented maximum answer, four reads at once leaving the gateway and the pages
// service within 100 MB.
func TestAbuseAmplifiedAudienceMessagesAreBounded(t *testing.T) {
	local(t)
	key := unlimitedKey(t)
	c := api(t, key)
	pageID, audienceID := newPageWithAudience(t, c)
	path := "/v0/pages/" + pageID + "/audiences/" + audienceID + "/messages"
	value := strings.Repeat("<", 20000) // the largest content and change value the contract allows
	changes := make([]map[string]any, 20)
	for i := range changes {
		changes[i] = map[string]any{"field": "currentSupplementaryContext", "newValue": value}
	}
	message := rawJSON(t, map[string]any{"content": value, "changes": changes})
	accepted, refused := 0, 0
	for range 6 {
		r, err := c.Try("POST", path, message)
		if err != nil {
			t.Fatalf("add a message of 420 KB: %v", err)
		}
		switch r.Status {
		case 201:
			accepted++
		case 409, 422: // past a documented cap on messages: refused in the envelope (checked by the client)
			refused++
		default:
			t.Fatalf("add a message of 420 KB: %s: a write is accepted or refused past a cap, never anything else", clip(r.String(), 300))
		}
	}
	if accepted == 0 {
		t.Fatalf("no message of 420 KB was accepted (%d refused): the contract allows one", refused)
	}
	t.Logf("%d messages of 420 KB accepted, %d refused", accepted, refused)

	procs := watchProcesses(t, "gateway", "pages")
	procs.stopOnCleanup()
	for _, a := range readFourBounded(t, key, path, maxAnswerBytes, procs) {
		var m struct {
			Messages        []any `json:"messages"`
			MessagesOmitted *int  `json:"messagesOmitted"`
			PendingChanges  []any `json:"pendingChanges"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &m) != nil || len(m.Messages) == 0 {
			t.Fatalf("GET %s: %d %s: the conversation must be read back", path, a.status, clip(string(a.body), 300))
		}
		omitted := 0
		if m.MessagesOmitted != nil {
			omitted = *m.MessagesOmitted
		}
		t.Logf("the answer lists %d messages (%d omitted) and %d pending changes", len(m.Messages), omitted, len(m.PendingChanges))
		if len(m.Messages)+omitted != accepted {
			t.Fatalf("GET %s: %d messages listed and %d counted as omitted, of the %d written: an answer that leaves messages out says how many", path, len(m.Messages), omitted, accepted)
		}
	}
	procs.check(fmt.Sprintf("four reads at once of a conversation of %d messages of 420 KB", accepted))
}

// deepBodyBudget is the time a deeply nested body may take to be refused.
const deepBodyBudget = 50 * time.Millisecond

// Deep bodies are refused before they are parsed: four PATCHes of an audience at once,
// each a 9,990-deep body (Go's decoder stops at 10,000; it took ~0.5 s of CPU to refuse
// one, and four at once 2.7-3.7 s each), are each refused with 400 VALIDATION_ERROR in
// under 50 ms. Three rounds: the requirement holds for the best round's slowest request,
// so one stall of a loaded machine does not fail it, while a parse that costs its half
// second does in every round.
func TestAbuseDeepBodiesAreRefusedCheaply(t *testing.T) {
	key := unlimitedKey(t)
	c := api(t, key)
	pageID, audienceID := newPageWithAudience(t, c)
	target := sys.base + "/v0/pages/" + pageID + "/audiences/" + audienceID
	const depth = 9990
	arrays := `{"supplementaryContext":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
	objects := `{"metadataOverride":` + strings.Repeat(`{"a":`, depth-2) + `{}` + strings.Repeat("}", depth-2) + `}`
	bodies := []string{arrays, objects, arrays, objects}
	// One client each, its connection open before the clock starts.
	clients := make([]*http.Client, len(bodies))
	defer func() {
		for _, hc := range clients {
			if hc != nil {
				hc.CloseIdleConnections()
			}
		}
	}()
	for i := range clients {
		clients[i] = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		if st, err := send(clients[i], "GET", target, key, ""); err != nil || st != 200 {
			t.Fatalf("GET the audience: %d %v", st, err)
		}
	}
	best := time.Duration(1<<63 - 1)
	for round := range 3 {
		took := make([]time.Duration, len(bodies))
		answers := make([]string, len(bodies))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				began := time.Now()
				st, out, err := sendRead(clients[i], "PATCH", target, key, body)
				took[i] = time.Since(began)
				answers[i] = fmt.Sprintf("%d %s %v", st, clip(out, 200), err)
				if err == nil && st == 400 && strings.Contains(out, `"code":"VALIDATION_ERROR"`) {
					answers[i] = ""
				}
			}()
		}
		close(start)
		wg.Wait()
		for i, a := range answers {
			if a != "" {
				t.Fatalf("a %d-deep body (%d bytes), one of four at once, must be refused with 400 VALIDATION_ERROR, got after %s: %s (the four took %v)",
					depth, len(bodies[i]), took[i].Round(time.Millisecond), a, took)
			}
		}
		t.Logf("round %d: four %d-deep bodies at once refused in %v", round+1, depth, took)
		best = min(best, slices.Max(took))
	}
	if best >= deepBodyBudget {
		t.Fatalf("four %d-deep bodies at once: the slowest refusal of the best of 3 rounds took %s; a deep body must be refused in under %s, before any parse", depth, best.Round(time.Millisecond), deepBodyBudget)
	}
	// The audience was not changed by any of it.
	if a := must(t, c.Do("GET", "/v0/pages/"+pageID+"/audiences/"+audienceID, nil), 200); a["supplementaryContext"] != nil || a["metadataOverride"] != nil {
		t.Fatalf("a refused body changed the audience: %v", a)
	}
}

// send sends a request with key and a JSON body ("" for none) and returns its status.
func send(hc *http.Client, method, target, key, body string) (int, error) {
	st, _, err := sendRead(hc, method, target, key, body)
	return st, err
}

// sendRead is send that also returns the answer's body.
func sendRead(hc *http.Client, method, target, key, body string) (int, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("x-api-key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(out), err
}

// stalledUploadsAllowed is the most uploads of one tenant that may be in flight at once:
// the per-tenant cap must be at most this (a per-process cap the assets service documents
// for all tenants together; a larger per-tenant one lets one tenant take all of it).
const stalledUploadsAllowed = 64

// startStalledUpload opens an upload with key whose body never ends (its headers, form
// fields and the first 16 KiB of a file of a declared 1 MiB are sent, then nothing) and
// waits in the background for an answer until deadline: it sends "<status> <headers>
// <body>" to answers, or "" when none came (still in flight, or cut off).
func startStalledUpload(key string, deadline time.Time, answers chan<- string) (net.Conn, error) {
	u, err := url.Parse(sys.base)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial the gateway: %w", err)
	}
	const boundary = "stalled-upload"
	var body bytes.Buffer
	for _, f := range [][2]string{{"name", "stalled"}, {"type", "image"}} {
		fmt.Fprintf(&body, "--%s\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n", boundary, f[0], f[1])
	}
	fmt.Fprintf(&body, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"stalled.png\"\r\nContent-Type: application/octet-stream\r\n\r\n", boundary)
	body.WriteString("\x89PNG\r\n\x1a\n")
	body.Write(make([]byte, 16<<10))
	head := fmt.Sprintf("POST /v0/assets HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n",
		u.Host, key, boundary, 1<<20)
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, head+body.String()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send the start of an upload: %w", err)
	}
	_ = conn.SetReadDeadline(deadline)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answers <- ""
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		answers <- fmt.Sprintf("%d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}()
	return conn, nil
}

// Stalled uploads cannot exhaust the assets service: of 200 uploads of one tenant whose
// bodies never end, those beyond the per-tenant cap are refused at once with 429
// RATE_LIMITED and Retry-After; the assets service grows by less than 100 MB; another
// tenant uploads meanwhile; and once the stalled uploads are cancelled, the first tenant
// uploads again (every upload used to be taken and held, ~6 MiB each with the S3 backend).
func TestAbuseStalledUploadsAreCappedPerTenant(t *testing.T) {
	local(t)
	keyA := unlimitedKey(t)
	procs := watchProcesses(t, "gateway", "assets")
	procs.stopOnCleanup()
	const n = 200
	results := make(chan string, n)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for range n {
		c, err := startStalledUpload(keyA, deadline, results)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// The refusals come at once; the uploads within the cap stay in flight. Collected
	// until a second passes without one once enough came, or for 10 s.
	var answers []string
	settle := time.After(10 * time.Second)
collect:
	for len(answers) < n {
		select {
		case a := <-results:
			if a != "" {
				answers = append(answers, a)
			}
		case <-time.After(time.Second):
			if len(answers) >= n-stalledUploadsAllowed {
				break collect
			}
		case <-settle:
			break collect
		}
	}
	refused := 0
	for _, a := range answers {
		if !strings.HasPrefix(a, "429 ") || !strings.Contains(a, `"code":"RATE_LIMITED"`) || strings.Contains(a, `Retry-After=""`) {
			t.Fatalf("an upload beyond the per-tenant cap must be refused with 429 RATE_LIMITED and Retry-After, got %s", clip(a, 300))
		}
		refused++
	}
	inFlight := n - refused
	t.Logf("%d stalled uploads of one tenant: %d refused with 429, %d in flight", n, refused, inFlight)
	if inFlight > stalledUploadsAllowed {
		t.Errorf("%d stalled uploads of one tenant: %d are in flight and only %d refused: uploads beyond the per-tenant cap (at most %d) must get 429 at once",
			n, inFlight, refused, stalledUploadsAllowed)
	}

	// Another tenant uploads meanwhile, without waiting behind them.
	began := time.Now()
	must(t, assetUpload(api(t, newKey(t, nil)), assetFile("other.png", assetPNG(20, 20)), assetField("name", "other tenant"), assetField("type", "image")), 201)
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("another tenant's upload waited %s behind one tenant's stalled uploads", took)
	}
	procs.check(fmt.Sprintf("%d stalled uploads of one tenant", n))

	// Cancelled, the stalled uploads give their slots back.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	a := api(t, keyA)
	testwait.For(t, 15*time.Second, "the tenant whose uploads were cancelled to upload again (201)", func() (bool, string) {
		r := assetUpload(a, assetFile("again.png", assetPNG(20, 20)), assetField("name", "again"), assetField("type", "image"))
		return r.Status == 201, clip(r.String(), 300)
	})
}

// manualRetries is how many times the delivery-attempts test retries one delivery: more
// than any documented bound on a delivery's listed attempts or manual retries.
const manualRetries = 60

// A delivery's attempts cannot be grown without bound by manual retries: a receiver
// answering 512 '<' (the largest response snippet an attempt keeps) gets one delivery
// retried 60 times, each retry once the attempt before it is over. Every retry is taken
// (202) or refused in the envelope past a cap, never anything else; the delivery and
// the list that holds it are read within the documented maximum; and either retries
// were refused at some point, or the delivery lists fewer attempts than were made (a
// delivery used to list every attempt: 60 retries, 61 attempts, about 700 bytes each,
// and no end).
func TestAbuseAmplifiedDeliveryAttemptsAreBounded(t *testing.T) {
	local(t)
	tenant := fmt.Sprintf("wh%d", time.Now().UnixNano())
	key := newKey(t, map[string]any{"tenantIds": []string{tenant}, "rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}})
	c := api(t, key)
	var received atomic.Int64
	snippet := strings.Repeat("<", 600)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		_, _ = io.WriteString(w, snippet)
	}))
	defer receiver.Close()
	subID, _ := whSubscribe(t, c, map[string]any{"url": receiver.URL, "events": []string{"page.version.created"}})
	whPublish(t, whEvent(t, tenant, events.TypePageVersionCreated, "audience_amplified",
		`"pageId":"page_amplified","versionId":"version_amplified","createdAt":"`+timestamp.Format(time.Now())+`"`))
	testwait.Eventually(t, 30*time.Second, "the first attempt of the delivery", func() bool { return received.Load() >= 1 })
	list := "/v0/webhook_subscriptions/" + subID + "/deliveries"
	var deliveryID string
	testwait.For(t, 10*time.Second, "the delivery to be listed as succeeded", func() (bool, string) {
		items := decode[apitypes.WebhookDeliveryPage](t, c.Do("GET", list, nil), 200).Items
		if len(items) != 1 {
			return false, fmt.Sprintf("%d deliveries", len(items))
		}
		deliveryID = items[0].DeliveryId
		return items[0].Status == "succeeded", string(items[0].Status)
	})
	one := list + "/" + deliveryID

	accepted, refusedAt := 0, 0
	began := time.Now()
	for i := range manualRetries {
		// Retried once the attempt before is over: an attempt in progress is a 409 for a
		// moment; a 409 or another refusal that lasts is a cap.
		var last *apitest.Response
		ok := testwait.Until(3*time.Second, func() bool {
			r, err := c.Try("POST", one+"/retry", nil)
			if err != nil {
				t.Fatalf("manual retry %d: %v", i+1, err)
			}
			last = r
			return r.Status == 202
		})
		if !ok {
			if last.Status >= 500 || last.Status < 400 {
				t.Fatalf("manual retry %d: %s: a retry is taken (202) or refused in the envelope, never anything else", i+1, clip(last.String(), 300))
			}
			refusedAt = i + 1
			t.Logf("manual retry %d refused: %s", i+1, clip(last.String(), 300))
			break
		}
		accepted++
		testwait.Eventually(t, 10*time.Second, fmt.Sprintf("the attempt of manual retry %d", i+1), func() bool { return received.Load() >= int64(i+2) })
	}
	t.Logf("%d manual retries taken in %s, the receiver got %d attempts", accepted, time.Since(began).Round(time.Millisecond), received.Load())

	// Read back within the documented maximum, alone and in the list.
	var listed int
	var size int64
	testwait.For(t, 10*time.Second, "the last attempt to be recorded", func() (bool, string) {
		a, err := getBounded(key, one, maxAnswerBytes)
		if err != nil {
			t.Fatal(err)
		}
		if a.over() {
			t.Fatalf("GET %s: %d bytes, over the documented maximum of %d: every answer must be bounded", one, a.size, a.limit)
		}
		var d struct {
			Status   string `json:"status"`
			Attempts []any  `json:"attempts"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &d) != nil {
			t.Fatalf("GET %s: %d %s", one, a.status, clip(string(a.body), 300))
		}
		listed, size = len(d.Attempts), a.size
		t.Logf("GET %s: %d bytes, %d attempts listed", one, a.size, listed)
		return d.Status == "succeeded", d.Status
	})
	if items := walkBounded(t, key, list+"?limit=100", maxAnswerBytes, 10); len(items) != 1 {
		t.Fatalf("paging through the subscription's deliveries returned %d of its 1", len(items))
	}
	if refusedAt == 0 && listed >= accepted+1 {
		t.Fatalf("%d manual retries of one delivery were all taken and it lists all %d attempts in %d bytes: manual retries grow a delivery's answer without bound, past the documented maximum after about %d retries (a documented cap on the retries or on the attempts listed must stop it)",
			accepted, listed, size, int64(maxAnswerBytes)*int64(listed)/max(size, 1))
	}
}
