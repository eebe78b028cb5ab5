package application_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/testwait"
)

// stalledUpload is an upload whose file part has begun and then stops: the client holds
// it open, as a slow or malicious one does.
type stalledUpload struct {
	body *io.PipeWriter
	resp chan *http.Response
}

// stall starts an upload for tenantID that sends its file part's first bytes and waits.
func (e *env) stall(t *testing.T, tenantID string) *stalledUpload {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", e.svc.URL+"/v0/assets", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=stall")
	req.Header.Set(tenant.Header, tenantID)
	e.svc.Sign(req)
	u := &stalledUpload{body: pw, resp: make(chan *http.Response, 1)}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			u.resp <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		u.resp <- resp
	}()
	t.Cleanup(func() { _ = pw.CloseWithError(io.ErrClosedPipe) })
	go func() {
		_, _ = io.WriteString(pw, "--stall\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n"+
			"Content-Type: application/octet-stream\r\n\r\n"+strings.Repeat("x", 8192))
	}()
	return u
}

// abandon ends the upload as a client that goes away does.
func (u *stalledUpload) abandon() { _ = u.body.CloseWithError(io.ErrClosedPipe) }

// One tenant's slow uploads cannot take every upload slot of a replica: past its cap
// (ASSETS_UPLOADS_PER_TENANT) its next upload is refused with 429 RATE_LIMITED and a
// Retry-After before its body is read, while another tenant still uploads; past the
// process cap (ASSETS_UPLOADS_PER_PROCESS) every tenant is refused; and every slot comes
// back when the uploads end, however they end.
func TestConcurrentUploadsAreCappedPerTenantAndPerProcess(t *testing.T) {
	e := start(t, map[string]string{"ASSETS_UPLOADS_PER_TENANT": "2", "ASSETS_UPLOADS_PER_PROCESS": "3"})
	staged := func(n int) {
		t.Helper()
		testwait.For(t, 10*time.Second, fmt.Sprintf("%d uploads streaming their file", n), func() (bool, string) {
			got := e.count(t, "SELECT count(*) FROM object_cleanup")
			return got == n, fmt.Sprintf("%d uploads staging", got)
		})
	}
	first, second := e.stall(t, "acme"), e.stall(t, "acme")
	staged(2)

	// The tenant's third upload is refused while its own body is still open: nothing of
	// it was read or buffered.
	third := e.stall(t, "acme")
	select {
	case resp := <-third.resp:
		if resp == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a tenant's upload past ASSETS_UPLOADS_PER_TENANT must be refused at once with 429 and Retry-After; got %v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a tenant's upload past ASSETS_UPLOADS_PER_TENANT was not refused before its body ended: it holds a slot")
	}
	r := upload(e.client(t, "acme"), file("a.png", pngImage(8, 8)), field("type", "image"))
	apitest.ExpectError(t, r, 429, "RATE_LIMITED", "an upload past the tenant's cap is the spec's 429 envelope")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("an upload refused by a cap must say when to retry (Retry-After)")
	}

	// Another tenant is not held back by acme's uploads.
	mustStatus(t, upload(e.client(t, "beta"), file("b.png", pngImage(8, 8)), field("type", "image")), 201)

	// The process cap: acme's two and beta's one fill it; gamma is refused.
	held := e.stall(t, "beta")
	staged(3)
	if r := upload(e.client(t, "gamma"), file("c.png", pngImage(8, 8)), field("type", "image")); r.Status != 429 {
		t.Fatalf("an upload past ASSETS_UPLOADS_PER_PROCESS must be refused with 429; got %s", r)
	}

	// The uploads end (the clients go away): every slot comes back.
	for _, u := range []*stalledUpload{first, second, held} {
		u.abandon()
		<-u.resp
	}
	staged(0)
	for _, tn := range []string{"acme", "acme", "gamma"} {
		testwait.For(t, 10*time.Second, "a slot of "+tn+" to come back once the uploads ended", func() (bool, string) {
			r := upload(e.client(t, tn), file("d.png", pngImage(8, 8)), field("type", "image"))
			return r.Status == 201, r.String()
		})
	}
}
