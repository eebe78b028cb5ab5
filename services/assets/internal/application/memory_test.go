package application_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/tenant"
)

// A 40 MiB upload streams through the service: the memory it allocates in all (and so
// the growth of its heap) stays far below the file's size. The client side of the test
// runs in the same process and streams too (a pipe, one reused 64 KiB buffer), so
// everything counted is bounded buffers, not the file.
func TestUploadMemoryStaysFarBelowFileSize(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 40 MiB")
	}
	e := start(t, nil)
	const size = 40 << 20
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sum := sha256.New()
	go func() {
		_ = mw.WriteField("type", "video")
		fw, err := mw.CreateFormFile("file", "big.mp4")
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		w := io.MultiWriter(fw, sum)
		_, _ = w.Write(mp4Header)
		rng := rand.New(rand.NewPCG(1, 2))
		buf := make([]byte, 64<<10)
		for left := size - len(mp4Header); left > 0; left -= len(buf) {
			for i := 0; i < len(buf); i += 8 {
				v := rng.Uint64()
				for j := 0; j < 8; j++ {
					buf[i+j] = byte(v >> (8 * j))
				}
			}
			if _, err := w.Write(buf[:min(left, len(buf))]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequest("POST", e.svc.URL+"/v0/assets", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(tenant.Header, "acme")
	e.svc.Sign(req)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	resp, err := http.DefaultClient.Do(req)
	close(stop)
	<-sampled
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if err := contract.Check(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Fatal(err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	growth := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("40 MiB upload: %.1f MiB allocated in all, heap in use grew by at most %.1f MiB",
		float64(allocated)/(1<<20), float64(growth)/(1<<20))
	if allocated > size/8 {
		t.Fatalf("the upload allocated %d bytes, more than an eighth of the file", allocated)
	}
	if growth > size/8 {
		t.Fatalf("heap in use grew by %d bytes, more than an eighth of the file", growth)
	}
	objs := e.objects(t)
	if len(objs) != 1 {
		t.Fatalf("objects: %v", objs)
	}
	fi, err := os.Stat(objs[0])
	if err != nil || fi.Size() != size {
		t.Fatalf("stored object: %v %v", fi, err)
	}
	want := hex.EncodeToString(sum.Sum(nil))
	if !containsAll(string(body), want, `"sizeBytes":41943040`, `"contentType":"video/mp4"`) {
		t.Fatalf("response %s, want sha256 %s", body, want)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
