package application_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/services/assets/internal/adapters/preview/previewtest"
	"github.com/customerapi/platform/services/assets/internal/adapters/signing"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestUploadReadAndDownload(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	img := pngImage(800, 400)
	a := apitest.Decode[apitypes.Asset](t, upload(c, file("hero.png", img), field("name", "Hero"), field("purpose", "landing page header"),
		field("type", "image"), field("tags", "Brand"), field("tags", "summer-2026"), field("hidden", "true")), 201, "an upload answers 201 with the asset")

	id := a.AssetId
	data := a.Data
	switch {
	case !strings.HasPrefix(id, "asset_") || a.TenantId != "acme" || a.Name != "Hero" || a.Purpose != "landing page header":
		t.Fatalf("asset = %+v", a)
	case fmt.Sprint(a.Tags) != "[Brand summer-2026]" || !a.Hidden || a.AiDescription != nil || a.ParentAssetId != nil:
		t.Fatalf("asset = %+v", a)
	case data.Type != "image" || data.ContentType != "image/png" || data.SizeBytes != len(img) || data.Sha256 != sha(img):
		t.Fatalf("data = %+v", data)
	case !strings.HasPrefix(data.FileId, "file_"):
		t.Fatalf("fileId = %v", data.FileId)
	case a.LifecycleState != "active" || a.TrashedAt != nil || a.DeletedAt != nil || a.CreatedAt != a.UpdatedAt:
		t.Fatalf("lifecycle = %+v", a)
	case a.DownloadUrl == nil || !strings.HasPrefix(*a.DownloadUrl, "http://127.0.0.1:25001/v0/asset_files/"):
		t.Fatalf("downloadUrl = %v", a.DownloadUrl)
	}
	got := apitest.Decode[apitypes.Asset](t, c.Do("GET", "/v0/assets/"+id, nil), 200, "a stored asset is read back")
	if got.Name != "Hero" || got.Data.Sha256 != sha(img) || got.PreviewDownloadUrl == nil {
		t.Fatalf("get = %+v", got)
	}

	// The original: whole, then ranges, then conditional.
	link := *a.DownloadUrl
	full := e.fetch(t, "GET", link)
	etag := `"` + sha(img) + `"`
	if full.status != 200 || !bytes.Equal(full.body, img) || full.header.Get("Content-Type") != "image/png" ||
		full.header.Get("Content-Length") != fmt.Sprint(len(img)) || full.header.Get("ETag") != etag ||
		full.header.Get("Accept-Ranges") != "bytes" || full.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("download: %d %v (%d bytes)", full.status, full.header, len(full.body))
	}
	part := e.fetch(t, "GET", link, "Range", "bytes=100-199")
	if part.status != 206 || !bytes.Equal(part.body, img[100:200]) ||
		part.header.Get("Content-Range") != fmt.Sprintf("bytes 100-199/%d", len(img)) || part.header.Get("Content-Length") != "100" {
		t.Fatalf("range: %d %v", part.status, part.header)
	}
	tail := e.fetch(t, "GET", link, "Range", "bytes=-10")
	if tail.status != 206 || !bytes.Equal(tail.body, img[len(img)-10:]) {
		t.Fatalf("suffix range: %d", tail.status)
	}
	if r := e.fetch(t, "GET", link, "Range", "bytes=100-199", "If-Range", `"other"`); r.status != 200 || !bytes.Equal(r.body, img) {
		t.Fatalf("If-Range with another ETag must give the whole file: %d", r.status)
	}
	if r := e.fetch(t, "GET", link, "Range", fmt.Sprintf("bytes=%d-", len(img))); r.status != 416 ||
		r.header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(img)) {
		t.Fatalf("unsatisfiable range: %d %v", r.status, r.header)
	}
	if r := e.fetch(t, "GET", link, "If-None-Match", etag); r.status != 304 || len(r.body) != 0 {
		t.Fatalf("If-None-Match: %d", r.status)
	}
	if r := e.fetch(t, "HEAD", link); r.status != 200 || len(r.body) != 0 || r.header.Get("Content-Length") != fmt.Sprint(len(img)) {
		t.Fatalf("HEAD: %d %v", r.status, r.header)
	}

	// The preview: a JPEG of at most 512 pixels on the longer side.
	if a.PreviewDownloadUrl == nil {
		t.Fatal("an image's upload must answer a previewDownloadUrl")
	}
	pv := e.fetch(t, "GET", *a.PreviewDownloadUrl)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(pv.body))
	if pv.status != 200 || err != nil || format != "jpeg" || cfg.Width != 512 || cfg.Height != 256 ||
		pv.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("preview: %d %s %v %v", pv.status, format, cfg, err)
	}
}

func TestMediaRulesPerType(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	video := append(append([]byte{}, mp4Header...), bytes.Repeat([]byte{7}, 5000)...)
	for _, tc := range []struct {
		name, typ   string
		file        part
		wantStatus  int
		contentType string
		preview     bool
	}{
		{"png image", "image", file("a.png", pngImage(20, 20)), 201, "image/png", true},
		{"png logo", "logo", file("a.png", pngImage(20, 20)), 201, "image/png", true},
		{"svg logo", "logo", file("a.svg", []byte(svgImage)), 201, "image/svg+xml", false},
		{"svg icon", "icon", file("a.svg", []byte(svgImage)), 201, "image/svg+xml", false},
		{"mp4 video", "video", file("a.mp4", video), 201, "video/mp4", false},
		{"html component", "custom-component", file("c.html", []byte("<!DOCTYPE html><html><body>hi</body></html>")), 201, "text/html; charset=utf-8", false},
		{"js component", "custom-component", part{name: "file", filename: "c.js", contentType: "text/javascript",
			data: []byte("export default function C() { return 1 }")}, 201, "text/javascript; charset=utf-8", false},
		{"json component", "custom-component", file("c.json", []byte(`{"a": [1, 2]}`)), 201, "application/json", false},
		{"png as video", "video", file("a.png", pngImage(20, 20)), 400, "", false},
		{"mp4 as image", "image", file("a.mp4", video), 400, "", false},
		{"svg as video", "video", file("a.svg", []byte(svgImage)), 400, "", false},
		{"exe component", "custom-component", file("c.exe", append([]byte("MZ\x90\x00\x03\x00\x00\x00"), make([]byte, 200)...)), 400, "", false},
		{"text as image", "image", file("a.png", []byte("just text pretending")), 400, "", false},
		{"corrupt png", "image", file("a.png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 300)...)), 400, "", false},
	} {
		r := upload(c, tc.file, field("type", tc.typ))
		if r.Status != tc.wantStatus {
			t.Errorf("%s: %s", tc.name, r)
			continue
		}
		if tc.wantStatus != 201 {
			if fmt.Sprint(issueCodes(r)) != "[body:invalid_type:[file]]" {
				t.Errorf("%s: issues %v", tc.name, issueCodes(r))
			}
			continue
		}
		m := apitest.Decode[apitypes.Asset](t, r, 201, tc.name+": an accepted upload answers the asset")
		if ct := m.Data.ContentType; ct != tc.contentType || (m.PreviewDownloadUrl != nil) != tc.preview {
			t.Errorf("%s: contentType %v, preview %v", tc.name, ct, m.PreviewDownloadUrl)
		}
		if m.Name != tc.file.filename {
			t.Errorf("%s: name %v, want the file name", tc.name, m.Name)
		}
	}
	// Refused uploads left nothing behind.
	if n := e.count(t, "SELECT count(*) FROM assets"); n != 8 {
		t.Fatalf("%d assets stored, want 8", n)
	}
	if n := len(e.objects(t)); n != 8+2 { // two previews
		t.Fatalf("%d objects stored, want 10", n)
	}
	if n := e.count(t, "SELECT count(*) FROM object_cleanup"); n != 0 {
		t.Fatalf("%d cleanup records left", n)
	}
}

// An image whose decoding would take more than ASSETS_PREVIEW_MAX_DECODE_BYTES (a 150 KiB
// 16-bit PNG of 8000×2000, 122 MiB decoded, over the default 128 MiB once scaling is
// counted) is stored without a preview, like one over the pixel limit, and is never
// decoded: the whole upload allocates a fraction of that. The setting is read: with a
// 4 MiB budget a tiny image still gets a preview, an 800×400 one no longer does.
func TestImagesOverThePreviewBudgetAreStoredWithoutPreview(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	deep := previewtest.PNG(previewtest.PNGOptions{Width: 8000, Height: 2000, Colour: previewtest.TruecolourAlpha, Depth: 16})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := upload(c, file("deep.png", deep), field("type", "image"))
	runtime.ReadMemStats(&after)
	a := apitest.Decode[apitypes.Asset](t, r, 201, "an image over the preview budget is stored")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("upload of a %d KiB 16-bit PNG of 8000x2000: %.1f MiB allocated in the process", len(deep)>>10, float64(alloc)/(1<<20))
	if a.PreviewDownloadUrl != nil || a.Data.Sha256 != sha(deep) {
		t.Errorf("an image over the preview decode budget must be stored whole, without a preview: %+v", a)
	}
	if alloc > 24<<20 {
		t.Errorf("the upload allocated %.1f MiB: an image over the preview budget must not be decoded", float64(alloc)/(1<<20))
	}
	if n := len(e.objects(t)); n != 1 {
		t.Errorf("%d objects stored, want the file alone", n)
	}

	small := start(t, map[string]string{"ASSETS_PREVIEW_MAX_DECODE_BYTES": "4194304"})
	sc := small.client(t, "acme")
	if a := mustStatus(t, upload(sc, file("tiny.png", pngImage(20, 20)), field("type", "image")), 201); a["previewDownloadUrl"] == nil {
		t.Errorf("a 20x20 image within a 4 MiB budget got no preview")
	}
	if a := mustStatus(t, upload(sc, file("wide.png", pngImage(800, 400)), field("type", "image")), 201); a["previewDownloadUrl"] != nil {
		t.Errorf("an 800x400 image (about 10 MiB to decode and scale) got a preview under a 4 MiB budget")
	}
}

func TestBadUploadsAre400AndLeaveNothing(t *testing.T) {
	e := start(t, map[string]string{"ASSETS_MAX_UPLOAD_BYTES": "1048576"})
	c := e.client(t, "acme")
	other := mustStatus(t, upload(e.client(t, "globex"), file("g.png", pngImage(4, 4)), field("type", "image")), 201)["assetId"].(string)
	img := file("a.png", pngImage(8, 8))
	typ := field("type", "image")
	tags := func(n int) []part {
		var out []part
		for i := range n {
			out = append(out, field("tags", fmt.Sprint("t", i)))
		}
		return out
	}
	for name, tc := range map[string]struct {
		parts []part
		want  string
	}{
		"no file":              {[]part{typ, field("name", "x")}, "[body:invalid_type:[file]]"},
		"empty file":           {[]part{file("e.png", nil), typ}, "[body:too_small:[file]]"},
		"two files":            {[]part{img, img, typ}, "[body:invalid_type:[file]]"},
		"no type":              {[]part{img}, "[body:invalid_type:[type]]"},
		"bad type":             {[]part{img, field("type", "pdf")}, "[body:invalid_enum_value:[type]]"},
		"two types":            {[]part{img, typ, typ}, "[body:invalid_type:[type]]"},
		"unknown field":        {[]part{img, typ, field("color", "red")}, "[body:unrecognized_keys:[color]]"},
		"bad hidden":           {[]part{img, typ, field("hidden", "yes")}, "[body:invalid_type:[hidden]]"},
		"empty name":           {[]part{img, typ, field("name", "")}, "[body:too_small:[name]]"},
		"blank name":           {[]part{img, typ, field("name", "   ")}, "[body:invalid_string:[name]]"},
		"long name":            {[]part{img, typ, field("name", strings.Repeat("n", 256))}, "[body:too_big:[name]]"},
		"no name at all":       {[]part{{name: "file", data: pngImage(4, 4)}, typ}, "[body:invalid_type:[name]]"},
		"long purpose":         {[]part{img, typ, field("purpose", strings.Repeat("p", 1001))}, "[body:too_big:[purpose]]"},
		"field too big":        {[]part{img, typ, field("purpose", strings.Repeat("p", 5000))}, "[body:too_big:[purpose]]"},
		"name as a file":       {[]part{img, typ, {name: "name", filename: "n.txt", data: []byte("n")}}, "[body:invalid_type:[name]]"},
		"empty tag":            {[]part{img, typ, field("tags", "ok"), field("tags", "")}, "[body:too_small:[tags 1]]"},
		"long tag":             {[]part{img, typ, field("tags", strings.Repeat("t", 65))}, "[body:too_big:[tags 0]]"},
		"padded tag":           {[]part{img, typ, field("tags", " x")}, "[body:invalid_string:[tags 0]]"},
		"duplicate tags":       {[]part{img, typ, field("tags", "Brand"), field("tags", "brand")}, "[body:custom:[tags 1]]"},
		"too many tags":        {append([]part{img, typ}, tags(51)...), "[body:too_big:[tags]]"},
		"missing parent":       {[]part{img, typ, field("parentAssetId", "asset_nope")}, "[body:custom:[parentAssetId]]"},
		"other tenant parent":  {[]part{img, typ, field("parentAssetId", other)}, "[body:custom:[parentAssetId]]"},
		"oversize":             {[]part{file("big.bin", bytes.Repeat([]byte{1}, 1<<20+1)), typ}, "[body:too_big:[file]]"},
		"oversize, type later": {[]part{file("big.png", append(pngImage(4, 4), make([]byte, 2<<20)...)), typ}, "[body:too_big:[file]]"},
		"control in name":      {[]part{img, typ, field("name", "a\x1bb")}, "[body:invalid_string:[name]]"},
		"control in purpose":   {[]part{img, typ, field("purpose", "ring\a")}, "[body:invalid_string:[purpose]]"},
		"tab in tag":           {[]part{img, typ, field("tags", "tab\tin")}, "[body:invalid_string:[tags 0]]"},
		"NBSP-padded tag":      {[]part{img, typ, field("tags", "x\u00a0")}, "[body:invalid_string:[tags 0]]"},
		"NUL in a field":       {[]part{img, typ, field("name", "a\x00b")}, "[body:invalid_string:[name]]"},
		"tags after a bad one": {[]part{img, typ, field("tags", "ok"), field("tags", "a\x00"), field("tags", "x "), field("tags", strings.Repeat("t", 5000)), field("tags", "OK")}, "[body:invalid_string:[tags 1] body:too_big:[tags 3] body:invalid_string:[tags 2] body:custom:[tags 4]]"},
		"not UTF-8":            {[]part{img, typ, field("purpose", "\xff")}, "[body:invalid_string:[purpose]]"},
		"type as a file":       {[]part{img, {name: "type", filename: "t.txt", data: []byte("image")}}, "[body:invalid_type:[type]]"},
		"unknown file part":    {[]part{img, typ, {name: "attachment", filename: "a.bin", data: make([]byte, 5000)}}, "[body:too_big:[attachment] body:unrecognized_keys:[attachment]]"},
		"file name, too long":  {[]part{file(strings.Repeat("n", 252)+".png", pngImage(4, 4)), typ}, "[body:too_big:[name]]"},
		"several problems":     {[]part{field("type", "pdf"), field("hidden", "maybe")}, "[body:invalid_type:[hidden] body:invalid_enum_value:[type] body:invalid_type:[file] body:invalid_type:[name]]"},
	} {
		r := upload(c, tc.parts...)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != tc.want {
			t.Errorf("%s: %d %v, want %s", name, r.Status, issueCodes(r), tc.want)
		}
	}
	// Bodies that are not multipart at all.
	for name, r := range map[string]*apitest.Response{
		"json body":        c.Do("POST", "/v0/assets", map[string]any{"type": "image"}),
		"no boundary":      c.With("Content-Type", "multipart/form-data").Do("POST", "/v0/assets", apitest.Raw("x")),
		"truncated":        c.With("Content-Type", "multipart/form-data; boundary=zzz").Do("POST", "/v0/assets", apitest.Raw("--zzz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc")),
		"garbage":          c.With("Content-Type", "multipart/form-data; boundary=zzz").Do("POST", "/v0/assets", apitest.Raw("not multipart")),
		"oversize by size": c.With("Content-Type", "multipart/form-data; boundary=zzz").Do("POST", "/v0/assets", apitest.Raw(strings.Repeat("x", 2<<20+10))),
	} {
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM assets WHERE tenant_id = 'acme'"); n != 0 {
		t.Fatalf("refused uploads stored %d assets", n)
	}
	if n := len(e.objects(t)); n != 2 { // globex's asset and its preview
		t.Fatalf("refused uploads left objects: %v", e.objects(t))
	}
	if n := e.count(t, "SELECT count(*) FROM object_cleanup"); n != 0 {
		t.Fatalf("%d cleanup records left", n)
	}
	// The service still works after all that, and takes what the rules allow: tags of
	// any script up to 64 characters, a purpose with line breaks, a name from the file,
	// hidden in any case.
	ok := mustStatus(t, upload(c, file("Plan.png", pngImage(4, 4)), typ, field("tags", "Große Marke"),
		field("tags", strings.Repeat("x", 64)), field("purpose", "two\n\tlines"), field("hidden", "TRUE")), 201)
	if ok["name"] != "Plan.png" || fmt.Sprint(ok["tags"]) != "[Große Marke "+strings.Repeat("x", 64)+"]" ||
		ok["purpose"] != "two\n\tlines" || ok["hidden"] != true {
		t.Fatalf("asset = %v", ok)
	}
}

// A multipart body whose closing boundary never arrives is incomplete, wherever it ends:
// in a part's data, on a boundary line, in the headers of a part that never comes. It is
// a 400 and nothing is stored, even when every part the asset needs arrived whole.
func TestTruncatedUploadsAre400AndLeaveNothing(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	whole, ct := form(field("type", "image"), field("name", "cut"), file("a.png", pngImage(8, 8)))
	boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
	closing := "\r\n--" + boundary + "--\r\n"
	if !strings.HasSuffix(string(whole), closing) {
		t.Fatalf("the form does not end with its closing boundary: %q", whole[len(whole)-64:])
	}
	parts := strings.TrimSuffix(string(whole), closing) // every part whole, the file's data last
	for name, body := range map[string]string{
		"no closing boundary":           parts,
		"no closing boundary, a CRLF":   parts + "\r\n",
		"a boundary, not the last":      parts + "\r\n--" + boundary,
		"a boundary line, then nothing": parts + "\r\n--" + boundary + "\r\n",
		"the headers of another part":   parts + "\r\n--" + boundary + "\r\nContent-Disposition: form-data; name=\"tags\"\r\n",
		"in another part's value":       parts + "\r\n--" + boundary + "\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nbra",
		"the closing boundary cut":      parts + "\r\n--" + boundary + "-",
		"in the file's data":            parts[:len(parts)-20],
	} {
		r := c.With("Content-Type", ct).Do("POST", "/v0/assets", apitest.Raw(body))
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "[body:invalid_type:[]]" {
			t.Errorf("%s: %s", name, r)
		}
	}
	if n := e.count(t, "SELECT count(*) FROM assets"); n != 0 {
		t.Fatalf("truncated uploads stored %d assets", n)
	}
	if objs := e.objects(t); len(objs) != 0 {
		t.Fatalf("truncated uploads left objects: %v", objs)
	}
	if n := e.count(t, "SELECT count(*) FROM object_cleanup"); n != 0 {
		t.Fatalf("%d cleanup records left", n)
	}
	// The whole body, and one with an epilogue after its closing boundary, are stored.
	mustStatus(t, c.With("Content-Type", ct).Do("POST", "/v0/assets", whole), 201)
	mustStatus(t, c.With("Content-Type", ct).Do("POST", "/v0/assets", apitest.Raw(string(whole)+"an epilogue\r\n")), 201)
}

func TestParentAsset(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	parent := mustStatus(t, upload(c, file("p.png", pngImage(4, 4)), field("type", "image")), 201)["assetId"].(string)
	child := mustStatus(t, upload(c, file("c.png", pngImage(4, 4)), field("type", "icon"), field("parentAssetId", parent)), 201)
	if child["parentAssetId"] != parent {
		t.Fatalf("child = %v", child)
	}
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+parent, nil), 204)
	r := upload(c, file("c.png", pngImage(4, 4)), field("type", "icon"), field("parentAssetId", parent))
	if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "[body:custom:[parentAssetId]]" {
		t.Fatalf("deleted parent: %s", r)
	}
}

func TestLifecycle(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	a := mustStatus(t, upload(c, file("logo.png", pngImage(64, 64)), field("name", "Acme Logo"), field("type", "logo"),
		field("tags", "Brand")), 201)
	id := a["assetId"].(string)
	link, previewLink := a["downloadUrl"].(string), a["previewDownloadUrl"].(string)
	keep := mustStatus(t, upload(c, file("other.png", pngImage(8, 8)), field("type", "image")), 201)["assetId"].(string)

	time.Sleep(2 * time.Millisecond) // the clock must move: timestamps have milliseconds, and updatedAt must change
	tr := mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/trash", nil), 200)
	if tr["lifecycleState"] != "trashed" || tr["trashedAt"] == nil || tr["updatedAt"] == a["updatedAt"] || tr["downloadUrl"] == nil {
		t.Fatalf("trashed = %v", tr)
	}
	if r := c.Do("POST", "/v0/assets/"+id+"/trash", map[string]any{}); r.Status != 409 || r.Map()["code"] != "CONFLICT" {
		t.Fatalf("trash twice: %s", r)
	}
	// A trashed asset's links still work: the trash can show it before it is restored.
	if r := e.fetch(t, "GET", link); r.status != 200 {
		t.Fatalf("trashed download: %d", r.status)
	}
	ids := func(path string) []string {
		var out []string
		for _, it := range apitest.Decode[apitypes.AssetPage](t, c.Do("GET", path, nil), 200, "a list answers a page of assets").Items {
			out = append(out, it.AssetId)
		}
		return out
	}
	if got := ids("/v0/assets"); fmt.Sprint(got) != fmt.Sprint([]string{keep}) {
		t.Fatalf("active list = %v", got)
	}
	for _, path := range []string{"/v0/assets/trash", "/v0/assets/trash?query=acme", "/v0/assets/trash?query=LOGO",
		"/v0/assets/trash?query=bran", "/v0/assets/trash?assetType=logo", "/v0/assets/trash?query=brand&assetType=logo"} {
		if got := ids(path); fmt.Sprint(got) != fmt.Sprint([]string{id}) {
			t.Fatalf("%s = %v", path, got)
		}
	}
	for _, path := range []string{"/v0/assets/trash?query=nothing", "/v0/assets/trash?assetType=image", "/v0/assets?query=acme"} {
		if got := ids(path); len(got) != 0 {
			t.Fatalf("%s = %v", path, got)
		}
	}

	re := mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/restore", map[string]any{}), 200)
	if re["lifecycleState"] != "active" || re["trashedAt"] != nil {
		t.Fatalf("restored = %v", re)
	}
	if r := c.Do("POST", "/v0/assets/"+id+"/restore", nil); r.Status != 409 {
		t.Fatalf("restore an active asset: %s", r)
	}
	if r := c.Do("POST", "/v0/assets/"+id+"/restore", map[string]any{"x": 1}); r.Status != 400 {
		t.Fatalf("restore with a body: %s", r)
	}

	before := len(e.objects(t))
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+id, nil), 204)
	del := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)
	if del["lifecycleState"] != "deleted" || del["deletedAt"] == nil || del["downloadUrl"] != nil || del["previewDownloadUrl"] != nil ||
		del["name"] != "Acme Logo" {
		t.Fatalf("deleted = %v", del)
	}
	if after := len(e.objects(t)); after != before-2 {
		t.Fatalf("objects %d → %d, want the file and its preview removed", before, after)
	}
	for _, l := range []string{link, previewLink} {
		if r := e.fetch(t, "GET", l); r.status != 404 {
			t.Fatalf("download of a deleted asset: %d", r.status)
		}
	}
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+id, nil), 204) // again: nothing changes
	for _, op := range []string{"trash", "restore"} {
		if r := c.Do("POST", "/v0/assets/"+id+"/"+op, nil); r.Status != 409 {
			t.Fatalf("%s of a deleted asset: %s", op, r)
		}
	}
	if got := ids("/v0/assets/trash"); len(got) != 0 {
		t.Fatalf("trash after delete = %v", got)
	}
	// Delete straight from the trash too.
	mustStatus(t, c.Do("POST", "/v0/assets/"+keep+"/trash", nil), 200)
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+keep, nil), 204)
	if n := len(e.objects(t)); n != 0 {
		t.Fatalf("objects left: %v", e.objects(t))
	}
	mustStatus(t, c.Do("GET", "/v0/assets/asset_missing", nil), 404)
	mustStatus(t, c.Do("DELETE", "/v0/assets/asset_missing", nil), 404)
	mustStatus(t, c.Do("POST", "/v0/assets/asset_missing/trash", nil), 404)
}

// Trash and restore take no body or an empty object, judged by the document before the
// asset is touched: white space alone is no JSON, and a field is unknown. (That the
// document reads a streamed body no further than the JSON limit, libs/request tests.)
func TestActionBodies(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	id := mustStatus(t, upload(c, file("a.png", pngImage(4, 4)), field("type", "image")), 201)["assetId"].(string)
	for _, op := range []string{"trash", "restore"} {
		for name, tc := range map[string]struct {
			body any
			want string
		}{
			"white space": {apitest.Raw(" \r\n "), "[body:invalid_json:[]]"},
			"a field":     {map[string]any{"now": true}, "[body:unrecognized_keys:[now]]"},
			"not JSON":    {apitest.Raw("trash"), "[body:invalid_json:[]]"},
		} {
			r := c.Do("POST", "/v0/assets/"+id+"/"+op, tc.body)
			if r.Status != 400 || fmt.Sprint(issueCodes(r)) != tc.want {
				t.Errorf("%s, %s: %d %v, want %s", op, name, r.Status, issueCodes(r), tc.want)
			}
		}
	}
	if got := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)["lifecycleState"]; got != "active" {
		t.Fatalf("refused requests changed the asset: %v", got)
	}
	mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/trash", apitest.Raw("{}")), 200)
	mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/restore", nil), 200)
}

func TestListsPaginateAndValidate(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	var want []string
	for i := range 7 {
		typ := "image"
		if i%2 == 1 {
			typ = "icon"
		}
		id := mustStatus(t, upload(c, file(fmt.Sprintf("f%d.png", i), pngImage(4, 4)), field("type", typ)), 201)["assetId"].(string)
		want = append([]string{id}, want...) // newest first
	}
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		path := apitest.Query("/v0/assets", "limit", "3")
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body := apitest.Decode[apitypes.AssetPage](t, c.Do("GET", path, nil), 200, "a list answers a page of assets")
		if wantTotal := map[bool]int{true: 7, false: 8}[page == 0]; body.TotalCount != wantTotal {
			t.Fatalf("totalCount = %v", body.TotalCount)
		}
		for _, it := range body.Items {
			seen = append(seen, it.AssetId)
		}
		if page == 0 { // a new asset mid-walk sorts before the position: not repeated, not skipping
			mustStatus(t, upload(c, file("late.png", pngImage(4, 4)), field("type", "image")), 201)
		}
		if !body.HasMore {
			break
		}
		if body.NextCursor == nil {
			t.Fatal("a page with more must answer a nextCursor")
		}
		cursor = *body.NextCursor
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("walk = %v\nwant %v", seen, want)
	}
	icons := mustStatus(t, c.Do("GET", "/v0/assets?assetType=icon&limit=1", nil), 200)
	if icons["totalCount"] != 3.0 || icons["hasMore"] != true {
		t.Fatalf("icons = %v", icons)
	}
	iconCursor := icons["nextCursor"].(string)
	for name, tc := range map[string]struct{ path, want string }{
		"limit 0":         {"/v0/assets?limit=0", "[query:too_small:[limit]]"},
		"limit 101":       {"/v0/assets/trash?limit=101", "[query:too_big:[limit]]"},
		"limit abc":       {"/v0/assets?limit=abc", "[query:invalid_type:[limit]]"},
		"bad assetType":   {"/v0/assets/trash?assetType=pdf", "[query:invalid_enum_value:[assetType]]"},
		"long query":      {"/v0/assets/trash?query=" + strings.Repeat("q", 201), "[query:too_big:[query]]"},
		"NUL in query":    {"/v0/assets/trash?query=a%00b", "[query:invalid_string:[query]]"},
		"bad UTF-8 query": {"/v0/assets?query=%ff", "[query:invalid_string:[query]]"},
		"control query":   {"/v0/assets?query=%1b", "[query:invalid_string:[query]]"},
		"tampered cursor": {"/v0/assets?cursor=" + url.QueryEscape(iconCursor[:len(iconCursor)-2]+"xx"), "[query:invalid_cursor:[cursor]]"},
		"other filter":    {"/v0/assets?cursor=" + url.QueryEscape(iconCursor), "[query:invalid_cursor:[cursor]]"},
		"other list":      {"/v0/assets/trash?assetType=icon&cursor=" + url.QueryEscape(iconCursor), "[query:invalid_cursor:[cursor]]"},
		"two assetTypes":  {"/v0/assets?assetType=icon&assetType=logo", "[query:invalid_type:[assetType]]"},
		"several at once": {"/v0/assets?limit=0&assetType=x", "[query:too_small:[limit] query:invalid_enum_value:[assetType]]"},
	} {
		r := c.Do("GET", tc.path, nil)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != tc.want {
			t.Errorf("%s: %d %v", name, r.Status, issueCodes(r))
		}
	}
	if r := e.client(t, "globex").Do("GET", "/v0/assets?assetType=icon&cursor="+url.QueryEscape(iconCursor), nil); r.Status != 400 {
		t.Fatalf("another tenant's cursor: %s", r)
	}
	mustStatus(t, c.Do("GET", "/v0/assets?assetType=icon&cursor="+url.QueryEscape(iconCursor), nil), 200)
}

func TestTenantIsolation(t *testing.T) {
	e := start(t, nil)
	a, b := e.client(t, "acme"), e.client(t, "globex")
	id := mustStatus(t, upload(a, file("s.png", pngImage(4, 4)), field("type", "image"), field("name", "secret")), 201)["assetId"].(string)
	mustStatus(t, b.Do("GET", "/v0/assets/"+id, nil), 404)
	mustStatus(t, b.Do("POST", "/v0/assets/"+id+"/trash", nil), 404)
	mustStatus(t, b.Do("POST", "/v0/assets/"+id+"/restore", nil), 404)
	mustStatus(t, b.Do("DELETE", "/v0/assets/"+id, nil), 404)
	for _, path := range []string{"/v0/assets", "/v0/assets/trash", "/v0/assets?query=secret"} {
		if n := mustStatus(t, b.Do("GET", path, nil), 200)["totalCount"]; n != 0.0 {
			t.Fatalf("globex sees %v assets at %s", n, path)
		}
	}
	mustStatus(t, a.Do("GET", "/v0/assets/"+id, nil), 200)
	// Without the gateway's tenant header the API refuses the request.
	anon := &apitest.Client{T: t, Base: e.svc.URL, Contract: contract}
	mustStatus(t, anon.Do("GET", "/v0/assets", nil), 401)
	mustStatus(t, anon.Do("GET", "/v0/assets/"+id, nil), 401)
}

func TestSignedLinks(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	a := apitest.Decode[apitypes.Asset](t, upload(c, file("s.svg", []byte(svgImage)), field("type", "icon")), 201, "an upload answers 201 with the asset")
	if a.DownloadUrl == nil {
		t.Fatal("an asset must answer its downloadUrl")
	}
	link := *a.DownloadUrl
	if r := e.fetch(t, "GET", link); r.status != 200 || string(r.body) != svgImage ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("svg download: %d %v", r.status, r.header)
	}
	u, _ := url.Parse(link)
	token := strings.TrimPrefix(u.Path, "/v0/asset_files/")
	body, sig, _ := strings.Cut(token, ".")
	claims, _ := json.Marshal(map[string]any{"t": "globex", "a": a.AssetId, "f": a.Data.FileId, "v": "original", "e": time.Now().Add(time.Hour).Unix()})
	forged := strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(b64(claims)), "=") + "." + sig
	for name, bad := range map[string]string{
		"tampered signature": body + "." + strings.Repeat("A", len(sig)),
		"tampered claims":    forged,
		"no signature":       body,
		"garbage":            "nonsense",
	} {
		r := e.fetch(t, "GET", "http://x/v0/asset_files/"+bad)
		if r.status != 403 || !strings.Contains(string(r.body), `"FORBIDDEN"`) || !strings.Contains(string(r.body), "invalid") {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	signer, err := signing.New(mustHex(signingKey))
	if err != nil {
		t.Fatal(err)
	}
	expired := signer.Sign(domain.Grant{TenantID: "acme", AssetID: a.AssetId, FileID: a.Data.FileId,
		Variant: domain.VariantOriginal, Expires: time.Now().Add(-time.Second)})
	if r := e.fetch(t, "GET", "http://x/v0/asset_files/"+expired); r.status != 403 || !strings.Contains(string(r.body), "expired") {
		t.Fatalf("expired link: %d %s", r.status, r.body)
	}
	// A valid signature over a preview the asset does not have, or another file, is 404.
	for _, cl := range []domain.Grant{
		{TenantID: "acme", AssetID: a.AssetId, FileID: a.Data.FileId, Variant: domain.VariantPreview},
		{TenantID: "acme", AssetID: a.AssetId, FileID: "file_other", Variant: domain.VariantOriginal},
		{TenantID: "globex", AssetID: a.AssetId, FileID: a.Data.FileId, Variant: domain.VariantOriginal},
	} {
		cl.Expires = time.Now().Add(time.Hour)
		if r := e.fetch(t, "GET", "http://x/v0/asset_files/"+signer.Sign(cl)); r.status != 404 {
			t.Fatalf("%+v: %d", cl, r.status)
		}
	}
}

func TestEventsThroughTheOutbox(t *testing.T) {
	e := start(t, nil)
	c := e.client(t, "acme")
	id := mustStatus(t, upload(c, file("a.png", pngImage(4, 4)), field("type", "image")), 201)["assetId"].(string)
	mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/trash", nil), 200)
	mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/restore", nil), 200)
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+id, nil), 204)
	mustStatus(t, c.Do("DELETE", "/v0/assets/"+id, nil), 204)
	got := readEvents(t, e.svc.Broker, 4)
	var types []string
	for _, ev := range got {
		if ev.Subject != id || ev.TenantID != "acme" {
			t.Fatalf("event %+v", ev)
		}
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[asset.created asset.trashed asset.restored asset.deleted]" {
		t.Fatalf("types = %v", types)
	}
	var p map[string]any
	_ = json.Unmarshal(got[3].Payload, &p)
	if p["reason"] != "request" || p["lifecycleState"] != "deleted" || p["assetId"] != id {
		t.Fatalf("deleted payload = %v", p)
	}
}
