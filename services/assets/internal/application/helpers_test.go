package application_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/assets/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

// signingKey is the service's SIGNING_KEY in these tests (64 hex digits).
const signingKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// env is a running assets service and where its objects live.
type env struct {
	svc *servicetest.Service
	dir string
}

func start(t *testing.T, settings map[string]string) *env {
	t.Helper()
	e := &env{dir: t.TempDir()}
	vars := map[string]string{"SIGNING_KEY": signingKey, "ASSETS_STORAGE_DIR": e.dir}
	for k, v := range settings {
		vars[k] = v
	}
	if d, ok := settings["ASSETS_STORAGE_DIR"]; ok {
		e.dir = d
	}
	e.svc = servicetest.Start(t, application.Name, application.Migrations, application.Setup, servicetest.Options{Env: vars})
	return e
}

func (e *env) client(t *testing.T, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: e.svc.URL, Contract: contract, Prepare: e.svc.Sign}).With(tenant.Header, tenantID)
}

// objects lists the stored objects (files outside the partial-upload directory).
func (e *env) objects(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".partial" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// count runs a count query on the service's database.
func (e *env) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := e.svc.Runtime.Pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

// issueCodes lists an error envelope's issues as "field:code:path".
var issueCodes = apitest.IssueCodes

// part is one part of a multipart upload.
type part struct {
	name, filename, contentType string
	data                        []byte
}

func field(name, value string) part { return part{name: name, data: []byte(value)} }

func file(filename string, data []byte) part {
	return part{name: "file", filename: filename, data: data}
}

// form encodes parts as multipart/form-data.
func form(parts ...part) (apitest.Raw, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", cd)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		} else if p.filename != "" {
			h.Set("Content-Type", "application/octet-stream")
		}
		pw, _ := w.CreatePart(h)
		_, _ = pw.Write(p.data)
	}
	_ = w.Close()
	return apitest.Raw(buf.String()), w.FormDataContentType()
}

func upload(c *apitest.Client, parts ...part) *apitest.Response {
	body, ct := form(parts...)
	return c.With("Content-Type", ct).Do("POST", "/v0/assets", body)
}

// pngImage is a w×h opaque gradient.
func pngImage(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// mp4Header starts a file that sniffs as video/mp4.
var mp4Header = []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")

const svgImage = `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>`

// fetched is a download's answer.
type fetched struct {
	status int
	header http.Header
	body   []byte
}

// fetch GETs (or HEADs) a signed link straight from the service, which serves the
// gateway's public /v0/asset_files/{token} at /files/{token}, and checks the answer
// against the document under the public path.
func (e *env) fetch(t *testing.T, method, link string, header ...string) fetched {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/v0/asset_files/") {
		t.Fatalf("not a download link: %q", link)
	}
	token := strings.TrimPrefix(u.Path, "/v0/asset_files/")
	req, _ := http.NewRequest(method, e.svc.URL+"/files/"+token, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	e.svc.Sign(req) // as the gateway's Files route does
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	public, _ := http.NewRequest(method, "http://contract.test"+u.Path, nil)
	if err := contract.Check(public, resp.StatusCode, resp.Header, body); err != nil {
		t.Fatalf("contract: %v\n%s", err, body)
	}
	return fetched{resp.StatusCode, resp.Header, body}
}

// readEvents reads assets.events from the start until n events are seen.
func readEvents(t *testing.T, b *kafkatest.Broker, n int) []events.Envelope {
	return kafkatest.ReadEvents(t, []string{b.Addr}, events.TopicAssets, n, nil)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
