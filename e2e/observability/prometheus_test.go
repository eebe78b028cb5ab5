package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/customerapi/platform/libs/testwait"
)

// rateInterval stands for Grafana's $__rate_interval: with a 1 s scrape, a minute holds
// the whole load.
const rateInterval = "1m"

// check is one expression to evaluate: where it comes from, and the query.
type check struct {
	where, expr string
}

// dashboardChecks reads the chart's dashboards, resolves their variables against
// Prometheus as Grafana would (a variable without values fails), and returns every
// panel's every query with the variables filled in.
func dashboardChecks(ctx context.Context, t *testing.T) []check {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sys.root, "helm", "customer-api", "dashboards", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards in helm/customer-api/dashboards")
	}
	var out []check
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Title      string `json:"title"`
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		vars := map[string]string{"__rate_interval": rateInterval}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(map[string]any)
			expr, _ := q["query"].(string)
			vals, err := labelValues(ctx, fill(expr, vars))
			if err != nil || len(vals) == 0 {
				t.Errorf("%s: variable $%s (%s) has no values: %v", d.Title, v.Name, expr, err)
				continue
			}
			vars[v.Name] = vals[0]
		}
		for _, p := range d.Panels {
			for i, tg := range p.Targets {
				out = append(out, check{where: fmt.Sprintf("dashboard %q, panel %q, query %c", d.Title, p.Title, 'A'+i),
					expr: fill(tg.Expr, vars)})
			}
		}
	}
	return out
}

var variableRef = regexp.MustCompile(`\$(\w+)`)

// fill replaces Grafana's $variables.
func fill(expr string, vars map[string]string) string {
	return variableRef.ReplaceAllStringFunc(expr, func(m string) string {
		if v, ok := vars[m[1:]]; ok {
			return v
		}
		return m
	})
}

var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// labelValues evaluates Grafana's label_values(selector, label) as the distinct values
// of label among the series selector matches.
func labelValues(ctx context.Context, q string) ([]string, error) {
	m := labelValuesQuery.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return nil, fmt.Errorf("not label_values(selector, label): %s", q)
	}
	rs, err := query(ctx, fmt.Sprintf("group by (%s) (%s)", m[2], m[1]))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		if v := r.Metric[m[2]]; v != "" {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out, nil
}

// alertChecks returns, for every alert of the chart, the operands of its comparisons:
// an alert expression is quiet in a healthy system (it returns nothing), so what must
// return data is the quantity it compares with its threshold.
func alertChecks(t *testing.T) []check {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(sys.rules, &rf); err != nil {
		t.Fatal(err)
	}
	var out []check
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			ops := operands(r.Expr)
			if len(ops) == 0 {
				t.Errorf("alert %s: no operand found in %s", r.Alert, r.Expr)
			}
			for i, op := range ops {
				out = append(out, check{where: fmt.Sprintf("alert %s, operand %d", r.Alert, i+1), expr: op})
			}
		}
	}
	return out
}

var number = regexp.MustCompile(`^[0-9.eE+-]+$`)

// operands splits a PromQL expression at its top-level comparison and set operators
// (==, !=, >=, <=, >, <, and, or, unless) and returns the parts that are not numbers.
func operands(expr string) []string {
	var parts []string
	depth, start := 0, 0
	word := func(i int, w string) bool {
		if !strings.HasPrefix(expr[i:], w) {
			return false
		}
		before := i == 0 || strings.ContainsRune(" \t\n)", rune(expr[i-1]))
		after := i+len(w) < len(expr) && strings.ContainsRune(" \t\n(", rune(expr[i+len(w)]))
		return before && after
	}
	cut := func(i, n int) {
		parts = append(parts, expr[start:i])
		start = i + n
	}
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '"' || c == '\'' || c == '`':
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' {
					i++
				}
			}
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth--
		case depth != 0:
		case strings.HasPrefix(expr[i:], "==") || strings.HasPrefix(expr[i:], "!=") ||
			strings.HasPrefix(expr[i:], ">=") || strings.HasPrefix(expr[i:], "<="):
			cut(i, 2)
			i++
		case c == '>' || c == '<':
			cut(i, 1)
		case word(i, "and"):
			cut(i, 3)
		case word(i, "unless"):
			cut(i, 6)
		case word(i, "or"):
			cut(i, 2)
		}
	}
	parts = append(parts, expr[start:])
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p != "" && !number.MatchString(p) {
			out = append(out, p)
		}
	}
	return out
}

var metricName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)

// metricNames are the names of the series an expression selects (those written with
// braces, as all of the chart's are).
func metricNames(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// receiver is a webhook receiver on this machine (private targets are allowed locally).
type receiver struct {
	*httptest.Server
	got atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		// Every seventh attempt fails, so the failure panels have something to show;
		// the retry then succeeds.
		if r.got.Add(1)%7 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func tinyPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 32, 16))
	for y := 0; y < 16; y++ {
		for x := 0; x < 32; x++ {
			img.Set(x, y, color.NRGBA{uint8(8 * x), uint8(16 * y), 99, 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

func upload(base, key string, img []byte) (map[string]any, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"name": "Observed", "purpose": "dashboards", "type": "image"} {
		_ = w.WriteField(k, v)
	}
	fw, _ := w.CreateFormFile("file", "observed.png")
	_, _ = fw.Write(img)
	_ = w.Close()
	req, _ := http.NewRequest("POST", base+"/v0/assets", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("x-api-key", key)
	return send(req, 201)
}

// send sends req and decodes the answer, which must have status want.
func send(req *http.Request, want int) (map[string]any, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %v", req.Method, req.URL.Path, resp.StatusCode, want, m)
	}
	return m, nil
}

// do sends a JSON request whose answer must have status want (0: any).
func do(base, key, method, path string, body any, want int) (map[string]any, error) {
	req := jsonRequest(base, key, method, path, body)
	if want == 0 {
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, err
	}
	return send(req, want)
}

// round is one round of a load worker: every service, through the replica base.
func round(base, key string, w, i int, img []byte) error {
	topic, err := do(base, key, "POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("Observed %d", i)}, 201)
	if err != nil {
		return err
	}
	if _, err := do(base, key, "GET", "/v0/topics/"+topic["topicId"].(string), nil, 200); err != nil {
		return err
	}
	if _, err := do(base, key, "GET", "/v0/topics?limit=5", nil, 200); err != nil {
		return err
	}
	page, err := do(base, key, "POST", "/v0/pages", map[string]any{"name": fmt.Sprintf("obs-%d-%d", w, i),
		"title": "Observed", "pageType": "inbound"}, 201)
	if err != nil {
		return err
	}
	pageID := page["pageId"].(string)
	aud, err := do(base, key, "POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "publish"}, 201)
	if err != nil {
		return err
	}
	if _, err := do(base, key, "POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
		"analyticsSessionId": fmt.Sprintf("obs-%d-%d-%d", w, i, time.Now().UnixNano()), "audienceId": aud["audienceId"],
		"sessionStartedAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"formSubmission":   map[string]any{"email": fmt.Sprintf("visitor%d.%d@example.com", w, i), "name": "A Visitor"}}, 201); err != nil {
		return err
	}
	if _, err := do(base, key, "POST", "/v0/persons", map[string]any{"name": "Observed Person",
		"email": fmt.Sprintf("person%d.%d.%d@observed.example", w, i, time.Now().UnixNano())}, 201); err != nil {
		return err
	}
	if _, err := do(base, key, "GET", "/v0/webhook_subscriptions", nil, 200); err != nil {
		return err
	}
	if i%3 == 0 {
		a, err := upload(base, key, img)
		if err != nil {
			return err
		}
		if _, err := do("", "", "GET", a["downloadUrl"].(string), nil, 0); err != nil {
			return err
		}
	}
	// Refused by the gateway itself: no key, an unknown key, an unknown route.
	for _, k := range []string{"", "capi_" + strings.Repeat("0", 40)} {
		if _, err := do(base, k, "GET", "/v0/topics", nil, 401); err != nil {
			return err
		}
	}
	_, err = do(base, key, "GET", "/v0/nowhere", nil, 404)
	return err
}

// load drives every service through both gateway replicas for a while: writes that emit
// events (consumed by persons and webhooks, delivered to a receiver), reads, an upload
// and its download, and requests the gateway refuses.
func load(t *testing.T, d time.Duration) {
	t.Helper()
	_, key := newKey(t, map[string]int{"limit": 100000, "windowMs": 1000})
	// The key was issued through the first replica; the other's key cache learns it
	// moments later (docs/keys.md). Wait for both, as a client deploying a new key would.
	testwait.For(t, 10*time.Second, "the new key to be known to both gateway replicas", func() (bool, string) {
		for _, g := range sys.gateways {
			resp, err := client.Do(jsonRequest(g.url, key, "GET", "/v0/topics?limit=1", nil))
			if err != nil {
				return false, err.Error()
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return false, g.url + " answers 401"
			}
		}
		return true, ""
	})
	rc := newReceiver(t)
	if _, err := do(sys.gateways[0].url, key, "POST", "/v0/webhook_subscriptions", map[string]any{"url": rc.URL + "/hook",
		"events": []string{"page.version.created", "page.version.processed", "page.version.published",
			"form.submitted", "form.enriched", "form.enrichment_failed"}}, 201); err != nil {
		t.Fatal(err)
	}
	img := tinyPNG()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	deadline := time.Now().Add(d)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i++ {
				if err := round(sys.gateways[i%2].url, key, w, i, img); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The events of the load reach the receiver: the whole pipeline ran.
	testwait.For(t, 30*time.Second, "a webhook delivery of the load to reach the receiver", func() (bool, string) {
		n := rc.got.Load()
		return n > 0, fmt.Sprintf("%d deliveries received", n)
	})
}

// TestDashboardsAndAlertsHaveData evaluates, on a real Prometheus scraping the whole
// system after a short load, every query of every panel of the chart's dashboards and
// every operand of every alert: each must return data, and each metric it names must be
// one the system exposes. Prometheus must also evaluate every alert rule without error,
// and scrape every process.
func TestDashboardsAndAlertsHaveData(t *testing.T) {
	need(t)
	load(t, 8*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every process is scraped.
	var targets struct {
		ActiveTargets []struct {
			Labels    map[string]string `json:"labels"`
			Health    string            `json:"health"`
			LastError string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := getJSON("/api/v1/targets", &targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets.ActiveTargets {
		if tg.Health != "up" {
			t.Errorf("target %s %s is %s: %s", tg.Labels["job"], tg.Labels["instance"], tg.Health, tg.LastError)
		}
	}

	checks := dashboardChecks(ctx, t)
	if sys.rules != nil {
		checks = append(checks, alertChecks(t)...)
	} else {
		t.Log("helm not found: the alerts' expressions are not evaluated (CI fails instead)")
	}
	// Series appear as the load's effects arrive (events consumed, deliveries made, the
	// consumer lag read): evaluate until every check has data, or the time is up.
	var failing []string
	testwait.Until(45*time.Second, func() bool {
		failing = failing[:0]
		var names []string
		if err := getJSON("/api/v1/label/__name__/values", &names); err != nil {
			t.Fatal(err)
		}
		exposed := map[string]bool{}
		for _, n := range names {
			exposed[n] = true
		}
		for _, c := range checks {
			for _, n := range metricNames(c.expr) {
				if !exposed[n] {
					failing = append(failing, fmt.Sprintf("%s: metric %s is not exposed by any process\n    %s", c.where, n, c.expr))
				}
			}
			rs, err := query(ctx, c.expr)
			switch {
			case err != nil:
				failing = append(failing, fmt.Sprintf("%s: %v\n    %s", c.where, err, c.expr))
			case len(rs) == 0:
				failing = append(failing, fmt.Sprintf("%s: no data\n    %s", c.where, c.expr))
			}
		}
		return len(failing) == 0
	})
	for _, f := range failing {
		t.Error(f)
	}
	t.Logf("%d expressions evaluated (dashboards and alerts)", len(checks))

	// Prometheus evaluates every rule of the chart without error.
	if sys.rules != nil {
		var rules struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := getJSON("/api/v1/rules", &rules); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health != "ok" {
					t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
				}
			}
		}
		if n == 0 {
			t.Error("Prometheus loaded no rule of the chart")
		}
	}
}
