package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	apispec "github.com/customerapi/platform/api"
)

// get sends a GET without a key.
func getNoKey(t *testing.T, path string, accept string) (status int, body string) {
	t.Helper()
	req, _ := http.NewRequest("GET", sys.base+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The reference and the error type pages answer without a key; an unknown code and the
// API itself still do not.
func TestDocsAndErrorPagesNeedNoKey(t *testing.T) {
	if status, body := getNoKey(t, "/docs", "text/html"); status != 200 || !strings.Contains(body, "<redoc") {
		t.Fatalf("/docs: %d %.200s", status, body)
	}
	if status, _ := getNoKey(t, "/docs/redoc.standalone.js", ""); status != 200 {
		t.Fatalf("the bundle: %d", status)
	}
	// The type URL of a real error answers a page about it.
	_, body := getNoKey(t, "/v0/pages", "application/json")
	var env struct{ Type string }
	if err := json.Unmarshal([]byte(body), &env); err != nil || !strings.HasSuffix(env.Type, "/errors/unauthorized") {
		t.Fatalf("an unauthenticated call: %s", body)
	}
	_, path, _ := strings.Cut(env.Type, "/errors/")
	path = "/errors/" + path
	if status, body := getNoKey(t, path, "text/html"); status != 200 || !strings.Contains(body, "<code>UNAUTHORIZED</code>") {
		t.Fatalf("%s as HTML: %d %s", path, status, body)
	}
	status, body := getNoKey(t, path, "application/json")
	var p map[string]any
	if status != 200 || json.Unmarshal([]byte(body), &p) != nil || p["type"] != env.Type || p["status"] != 401.0 {
		t.Fatalf("%s as JSON: %d %s", path, status, body)
	}
	if status, _ := getNoKey(t, "/errors/nope", ""); status != 404 {
		t.Fatalf("/errors/nope: %d", status)
	}
}

// chromium finds Debian's chromium; without it the test is skipped, unless
// E2E_REQUIRE_CHROMIUM is set (make test installs it and sets it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("E2E_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed (apt-get install chromium)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// runChromium runs headless Chromium on url with extra flags and returns its stdout.
func runChromium(t *testing.T, bin, url string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Chromium's own services (sign-in, updates, autofill, optimization hints) look up
	// Google's names even headless and with background networking off: every host but the
	// page's resolves to nothing inside Chromium, so not one DNS query leaves the machine
	// (make test-kind's capture counts every packet).
	u, err := neturl.Parse(url)
	if err != nil || u.Hostname() == "" {
		t.Fatalf("chromium: %q is not an absolute URL", url)
	}
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--disable-default-apps", "--disable-domain-reliability", "--no-pings",
		"--disable-features=OptimizationHints,AutofillServerCommunication,Translate,MediaRouter",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE " + u.Hostname(),
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=30000"}, flags...)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	out, stderr, err := runIsolated(ctx, t.TempDir(), u.Hostname(), port, append(append([]string{bin}, args...), url))
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr)
	}
	return string(out)
}

// /docs renders in a browser with every operation of the document; the screenshot is
// kept in E2E_ARTIFACTS (default .artifacts/ at the repository's root).
func TestDocsRenderEveryOperationInChromium(t *testing.T) {
	bin := chromium(t)
	doc, err := openapi3.NewLoader().LoadFromData(apispec.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			want = append(want, op.OperationID)
		}
	}
	slices.Sort(want)

	dom := runChromium(t, bin, sys.base+"/docs", "--dump-dom")
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`data-section-id="[^"]*operation/([A-Za-z0-9_]+)"`).FindAllStringSubmatch(dom, -1) {
		seen[m[1]] = true
	}
	var missing []string
	for _, id := range want {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 || len(seen) != len(want) {
		t.Fatalf("the rendered reference shows %d operations of %d; missing %v", len(seen), len(want), missing)
	}
	t.Logf("the rendered reference shows all %d operations", len(want))
	// Each operation's request samples: a curl, a Go and a TypeScript tab (x-codeSamples,
	// added by the gateway to the document it serves).
	tabs := map[string]int{}
	for _, m := range regexp.MustCompile(`role="tab"[^>]*>(curl|Go|TypeScript)<`).FindAllStringSubmatch(dom, -1) {
		tabs[m[1]]++
	}
	for _, label := range []string{"curl", "Go", "TypeScript"} {
		if tabs[label] != len(want) {
			t.Errorf("the rendered reference has %d %s sample tabs for %d operations", tabs[label], label, len(want))
		}
	}

	dir := os.Getenv("E2E_ARTIFACTS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "docs.png")
	runChromium(t, bin, sys.base+"/docs", "--screenshot="+shot, "--window-size=1440,1800", "--hide-scrollbars")
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// Every error type's page renders in a browser with its Markdown turned into HTML: code
// spans as <code>, no backtick left.
func TestErrorPagesRenderInChromium(t *testing.T) {
	bin := chromium(t)
	doc, err := openapi3.NewLoader().LoadFromData(apispec.Spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Components.Schemas["ErrorEnvelope"].Value.Properties["code"].Value.Enum {
		code := c.(string)
		dom := runChromium(t, bin, sys.base+"/errors/"+strings.ToLower(code), "--dump-dom")
		if !strings.Contains(dom, "<code>"+code+"</code>") || strings.Contains(dom, "`") {
			t.Errorf("/errors/%s does not render as HTML (a <code> span, no backtick):\n%s", strings.ToLower(code), dom)
		}
	}
}
