package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // the preview is a JPEG
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
)

// assetPart is one part of a multipart upload: a text field, or the file when filename
// is set.
type assetPart struct {
	name, filename string
	data           []byte
}

func assetField(name, value string) assetPart { return assetPart{name: name, data: []byte(value)} }

func assetFile(filename string, data []byte) assetPart {
	return assetPart{name: "file", filename: filename, data: data}
}

// assetUpload sends POST /v0/assets as multipart/form-data through the gateway.
func assetUpload(c *apitest.Client, parts ...assetPart) *apitest.Response {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf("form-data; name=%q", p.name)
		if p.filename != "" {
			cd += fmt.Sprintf("; filename=%q", p.filename)
			h.Set("Content-Type", "application/octet-stream")
		}
		h.Set("Content-Disposition", cd)
		pw, _ := w.CreatePart(h)
		_, _ = pw.Write(p.data)
	}
	_ = w.Close()
	return c.With("Content-Type", w.FormDataContentType()).Do("POST", "/v0/assets", apitest.Raw(buf.String()))
}

// assetPNG is a w×h opaque gradient.
func assetPNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// assetFetch GETs a signed link without any key and checks the answer against the
// contract. The link is absolute; against an external system whose public address is
// not the one the suite reaches, its path is sent to the suite's gateway.
func assetFetch(t *testing.T, link string, header ...string) *apitest.Response {
	t.Helper()
	return assetFetchMethod(t, "GET", link, header...)
}

// assetFetchMethod is assetFetch with another method (HEAD).
func assetFetchMethod(t *testing.T, method, link string, header ...string) *apitest.Response {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || !u.IsAbs() || !strings.HasPrefix(u.Path, "/v0/asset_files/") {
		t.Fatalf("not an absolute download link: %q", link)
	}
	if !strings.HasPrefix(link, sys.base) {
		link = strings.TrimRight(sys.base, "/") + u.RequestURI()
	}
	c := &apitest.Client{T: t, Contract: sys.contract, HTTP: &http.Client{}}
	for i := 0; i+1 < len(header); i += 2 {
		c = c.With(header[i], header[i+1])
	}
	return c.Do(method, link, nil)
}

func assetIDs(t *testing.T, c *apitest.Client, path string) []string {
	t.Helper()
	var out []string
	for _, it := range decode[apitypes.AssetPage](t, c.Do("GET", path, nil), 200).Items {
		out = append(out, it.AssetId)
	}
	return out
}

// The whole life of an image through the gateway: upload, download by the signed link
// without a key (the same bytes), preview, trash, found in the trash by query, restore,
// delete.
func TestAssetsThroughTheGateway(t *testing.T) {
	c := api(t, newKey(t, nil))
	img := assetPNG(600, 300)
	sum := sha256.Sum256(img)
	a := decode[apitypes.Asset](t, assetUpload(c, assetFile("hero.png", img), assetField("name", "Summer Hero"),
		assetField("purpose", "landing page header"), assetField("type", "image"),
		assetField("tags", "Campaign-2026"), assetField("tags", "brand")), 201)
	id := a.AssetId
	if data := a.Data; a.LifecycleState != "active" || data.Type != "image" || data.ContentType != "image/png" ||
		data.Sha256 != hex.EncodeToString(sum[:]) || a.AiDescription != nil {
		t.Fatalf("uploaded = %+v", a)
	}
	must(t, c.Do("GET", "/v0/assets/"+id, nil), 200)

	// The signed link works without x-api-key and gives back the very bytes.
	if a.DownloadUrl == nil || a.PreviewDownloadUrl == nil {
		t.Fatalf("an active image has a download and a preview link: %+v", a)
	}
	link := *a.DownloadUrl
	d := assetFetch(t, link)
	if d.Status != 200 || !bytes.Equal(d.Body, img) || d.Header.Get("Content-Type") != "image/png" ||
		d.Header.Get("Content-Length") != fmt.Sprint(len(img)) || d.Header.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("download: %d %v (%d bytes)", d.Status, d.Header, len(d.Body))
	}
	if r := assetFetch(t, link, "Range", "bytes=10-19"); r.Status != 206 || !bytes.Equal(r.Body, img[10:20]) {
		t.Fatalf("range: %d (%d bytes)", r.Status, len(r.Body))
	}
	if r := assetFetch(t, link, "If-None-Match", d.Header.Get("ETag")); r.Status != 304 {
		t.Fatalf("If-None-Match: %d", r.Status)
	}
	if r := assetFetchMethod(t, "HEAD", link); r.Status != 200 || len(r.Body) != 0 || r.Header.Get("Content-Length") != fmt.Sprint(len(img)) {
		t.Fatalf("HEAD: %d %v", r.Status, r.Header)
	}
	// The preview: a JPEG of at most 512 pixels on the longer side.
	pv := assetFetch(t, *a.PreviewDownloadUrl)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(pv.Body))
	if pv.Status != 200 || err != nil || format != "jpeg" || cfg.Width != 512 || cfg.Height != 256 {
		t.Fatalf("preview: %d %s %v %v", pv.Status, format, cfg, err)
	}
	// A tampered link is a 403 in the envelope.
	tampered := link[:len(link)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(link, "A")]
	if r := assetFetch(t, tampered); r.Status != 403 || r.Map()["code"] != "FORBIDDEN" {
		t.Fatalf("tampered link: %s", r)
	}

	// Trash, find it there by name or tag (any case), restore.
	tr := must(t, c.Do("POST", "/v0/assets/"+id+"/trash", nil), 200)
	if tr["lifecycleState"] != "trashed" || tr["trashedAt"] == nil {
		t.Fatalf("trashed = %v", tr)
	}
	if got := assetIDs(t, c, "/v0/assets"); len(got) != 0 {
		t.Fatalf("active list holds a trashed asset: %v", got)
	}
	for _, q := range []string{"summer", "CAMPAIGN", "hero"} {
		if got := assetIDs(t, c, apitest.Query("/v0/assets/trash", "query", q, "assetType", "image")); fmt.Sprint(got) != fmt.Sprint([]string{id}) {
			t.Fatalf("trash?query=%s = %v", q, got)
		}
	}
	if got := assetIDs(t, c, apitest.Query("/v0/assets/trash", "query", "winter")); len(got) != 0 {
		t.Fatalf("trash?query=winter = %v", got)
	}
	if got := assetIDs(t, c, apitest.Query("/v0/assets/trash", "assetType", "video")); len(got) != 0 {
		t.Fatalf("trash?assetType=video = %v", got)
	}
	re := must(t, c.Do("POST", "/v0/assets/"+id+"/restore", map[string]any{}), 200)
	if re["lifecycleState"] != "active" || re["trashedAt"] != nil {
		t.Fatalf("restored = %v", re)
	}
	if got := assetIDs(t, c, "/v0/assets"); fmt.Sprint(got) != fmt.Sprint([]string{id}) {
		t.Fatalf("active list = %v", got)
	}

	// Delete: the record stays, the bytes and links go.
	must(t, c.Do("DELETE", "/v0/assets/"+id, nil), 204)
	del := must(t, c.Do("GET", "/v0/assets/"+id, nil), 200)
	if del["lifecycleState"] != "deleted" || del["deletedAt"] == nil || del["downloadUrl"] != nil || del["previewDownloadUrl"] != nil {
		t.Fatalf("deleted = %v", del)
	}
	if r := assetFetch(t, link); r.Status != 404 {
		t.Fatalf("download after delete: %s", r)
	}
	if got := assetIDs(t, c, "/v0/assets"); len(got) != 0 {
		t.Fatalf("active list after delete = %v", got)
	}

	// Another tenant sees none of it.
	other := api(t, newKey(t, nil))
	must(t, other.Do("GET", "/v0/assets/"+id, nil), 404)
}

// Bad uploads and queries are 400 envelopes through the gateway, never 500.
func TestAssetsValidationThroughTheGateway(t *testing.T) {
	c := api(t, newKey(t, nil))
	img := assetFile("a.png", assetPNG(8, 8))
	for name, parts := range map[string][]assetPart{
		"no file":       {assetField("type", "image"), assetField("name", "x")},
		"empty file":    {assetFile("e.png", nil), assetField("type", "image")},
		"wrong type":    {assetFile("a.txt", []byte("plain text, not an image")), assetField("type", "image")},
		"unknown type":  {img, assetField("type", "pdf")},
		"no type":       {img},
		"empty tag":     {img, assetField("type", "image"), assetField("tags", "")},
		"long tag":      {img, assetField("type", "image"), assetField("tags", strings.Repeat("t", 65))},
		"duplicate tag": {img, assetField("type", "image"), assetField("tags", "a"), assetField("tags", "A")},
		"bad hidden":    {img, assetField("type", "image"), assetField("hidden", "maybe")},
		"no parent":     {img, assetField("type", "image"), assetField("parentAssetId", "asset_none")},
	} {
		if r := assetUpload(c, parts...); r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
	for name, r := range map[string]*apitest.Response{
		"json body":         c.Do("POST", "/v0/assets", map[string]any{"type": "image"}),
		"bad assetType":     c.Do("GET", "/v0/assets/trash?assetType=pdf", nil),
		"limit 0":           c.Do("GET", "/v0/assets?limit=0", nil),
		"garbage cursor":    c.Do("GET", "/v0/assets/trash?cursor=abc", nil),
		"body on trash":     c.Do("POST", "/v0/assets/asset_x/trash", map[string]any{"x": 1}),
		"download has body": api(t, "").Do("GET", "/v0/asset_files/tok", apitest.Raw("x")),
	} {
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
	// Over the upload limit (50 MiB by default): a body streamed in without a declared
	// length, within what the gateway lets through (limit + 1 MiB), is refused by the
	// service with a 400 once the file passes the limit.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("type", "video")
		fw, _ := mw.CreateFormFile("file", "huge.bin")
		chunk := make([]byte, 512<<10)
		for i := 0; i < 101; i++ { // 50.5 MiB
			if _, err := fw.Write(chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequest("POST", sys.base+"/v0/assets", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	for k, v := range c.Header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = pr.Close()
	if err := sys.contract.Check(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Fatalf("oversize: %v", err)
	}
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"too_big"`) {
		t.Fatalf("oversize: %d %s", resp.StatusCode, body)
	}
	if n := must(t, c.Do("GET", "/v0/assets", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("refused uploads stored %v assets", n)
	}
}
