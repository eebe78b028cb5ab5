package application_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The service on the S3 backend (an in-process S3-protocol server): upload, download
// with a range, preview, delete removes the objects.
func TestS3Backend(t *testing.T) {
	backend := s3mem.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: gofakes3.New(backend).Server()}}
	srv.Start()
	defer srv.Close()
	e := start(t, map[string]string{
		"ASSETS_STORAGE": "s3", "ASSETS_S3_ENDPOINT": strings.TrimPrefix(srv.URL, "http://"), "ASSETS_S3_BUCKET": "assets",
		"ASSETS_S3_TLS": "false", "ASSETS_S3_PATH_STYLE": "true", "ASSETS_S3_CREATE_BUCKET": "true",
		"ASSETS_S3_ACCESS_KEY_ID": "test", "ASSETS_S3_SECRET_ACCESS_KEY": "test-secret",
	})
	c := e.client(t, "acme")
	img := pngImage(300, 200)
	big := append(append([]byte{}, mp4Header...), bytes.Repeat([]byte("0123456789abcdef"), 500_000)...) // 8 MB: multipart
	a := mustStatus(t, upload(c, file("a.png", img), field("type", "image")), 201)
	v := mustStatus(t, upload(c, file("v.mp4", big), field("type", "video")), 201)
	if r := e.fetch(t, "GET", a["downloadUrl"].(string)); r.status != 200 || !bytes.Equal(r.body, img) {
		t.Fatalf("download: %d", r.status)
	}
	if r := e.fetch(t, "GET", v["downloadUrl"].(string)); r.status != 200 || !bytes.Equal(r.body, big) {
		t.Fatalf("download of a multipart object: %d (%d bytes)", r.status, len(r.body))
	}
	if r := e.fetch(t, "GET", v["downloadUrl"].(string), "Range", "bytes=6000000-6000099"); r.status != 206 || !bytes.Equal(r.body, big[6000000:6000100]) {
		t.Fatalf("range: %d", r.status)
	}
	if r := e.fetch(t, "GET", a["previewDownloadUrl"].(string)); r.status != 200 || r.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("preview: %d", r.status)
	}
	count := func() int {
		list, err := backend.ListBucket("assets", &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Contents)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d objects in the bucket, want 3", n)
	}
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+a["assetId"].(string), nil), 204)
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+v["assetId"].(string), nil), 204)
	if n := count(); n != 0 {
		t.Fatalf("%d objects left in the bucket", n)
	}
}
