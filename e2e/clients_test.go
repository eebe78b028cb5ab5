package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	customerapi "github.com/customerapi/platform/clients/go"
	"github.com/customerapi/platform/e2e/faultload"
	"github.com/customerapi/platform/libs/testwait"
)

// The Go client generated from the document, with its hand-written layer, against the
// whole system: a page with an audience, a list of more than two pages walked with the
// iterator, a 404 read back as a typed error, and a test event received and verified by
// the example receiver (examples/webhook-receiver/go) with clients/go/webhooks.
func TestGoClient(t *testing.T) {
	ctx := context.Background()
	c, err := customerapi.New(sys.base, newKey(t, nil))
	if err != nil {
		t.Fatal(err)
	}

	page, err := c.CreatePageWithResponse(ctx, nil, customerapi.PageCreate{Name: "Client e2e", Title: "Pricing", PageType: "inbound"})
	if err != nil || page.JSON201 == nil {
		t.Fatalf("create page: %v", err)
	}
	pageID := page.JSON201.PageId
	aud, err := c.CreateAudienceWithResponse(ctx, pageID, nil, customerapi.AudienceCreate{})
	if err != nil || aud.JSON201 == nil || aud.JSON201.PageId != pageID {
		t.Fatalf("create audience: %v", err)
	}

	want := map[string]bool{pageID: true}
	for i := range 4 {
		p, err := c.CreatePageWithResponse(ctx, nil, customerapi.PageCreate{Name: fmt.Sprintf("page %d", i), Title: "T", PageType: "inbound"})
		if err != nil {
			t.Fatal(err)
		}
		want[p.JSON201.PageId] = true
	}
	limit, fetches := 2, 0
	seen := map[string]bool{}
	for p, err := range customerapi.All(ctx, func(ctx context.Context, cursor *string) ([]customerapi.Page, *string, error) {
		fetches++
		r, err := c.ListPagesWithResponse(ctx, &customerapi.ListPagesParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return r.JSON200.Items, r.JSON200.NextCursor, nil
	}) {
		if err != nil {
			t.Fatalf("iterating: %v", err)
		}
		if seen[p.PageId] || !want[p.PageId] {
			t.Fatalf("page %s seen twice or not ours", p.PageId)
		}
		seen[p.PageId] = true
	}
	if len(seen) != len(want) || fetches != 3 {
		t.Fatalf("walked %d of %d pages in %d fetches", len(seen), len(want), fetches)
	}

	_, err = c.GetPageWithResponse(ctx, "page_01khjzeje5es8b04emc6f0p6ta")
	var apiErr *customerapi.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "NOT_FOUND" || apiErr.RequestID == "" ||
		!strings.HasSuffix(apiErr.Type, "/errors/not_found") {
		t.Fatalf("a missing page: %#v", err)
	}

	// A key that does not exist, and a real key sent as a bearer token (the most common
	// first guess): each 401 says why.
	for _, tc := range []struct {
		key, bearer string
		want        customerapi.UnauthorizedDetailsReason
	}{
		{key: "capi_" + strings.Repeat("0", 40), want: customerapi.UnknownKey},
		{bearer: newKey(t, nil), want: customerapi.WrongHeader},
	} {
		opts := []customerapi.Option{customerapi.WithRetries(0, 0)}
		if tc.bearer != "" {
			opts = append(opts, customerapi.WithRequestEditor(func(_ context.Context, r *http.Request) error {
				r.Header.Del("x-api-key")
				r.Header.Set("Authorization", "Bearer "+tc.bearer)
				return nil
			}))
		}
		bad, err := customerapi.New(sys.base, tc.key, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.ListTopicsWithResponse(ctx, nil)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.UnauthorizedReason() != tc.want {
			t.Errorf("a 401's reason: %v (reason %q), want %s", err, apiErr.UnauthorizedReason(), tc.want)
		}
	}

	t.Run("test event verified by the example receiver", func(t *testing.T) { goReceiverTest(t, c) })
}

func goReceiverTest(t *testing.T, c *customerapi.API) {
	ctx := context.Background()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "webhook-receiver")
	build := exec.Command("go", "build", "-o", bin, "./examples/webhook-receiver/go")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build the example receiver: %v", err)
	}
	// A free port on the receivers' address ($E2E_RECEIVER_HOST: the system may run
	// elsewhere, such as in a cluster, and must reach the receiver).
	l, err := faultload.Listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	url := "http://" + addr + "/webhook"
	sub, err := c.CreateWebhookSubscriptionWithResponse(ctx, nil, customerapi.WebhookSubscriptionCreate{Url: url,
		Events: &customerapi.WebhookEventTypes{"form.submitted"}})
	if err != nil {
		t.Fatal(err)
	}
	secret := sub.JSON201.SigningSecret
	rc := startReceiver(t, bin, []string{"WEBHOOK_SECRET=" + secret, "ADDR=" + addr}, "listening on")

	sent, err := c.SendWebhookTestEventWithResponse(ctx, sub.JSON201.SubscriptionId, nil, customerapi.WebhookTestEventRequest{EventType: "form.submitted"})
	if err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, "verified "+sent.JSON202.EventId+" form.submitted")
	// The receiver answered 204 only after verifying: the delivery succeeded.
	testwait.Eventually(t, 10*time.Second, "the test delivery to succeed", func() bool {
		r, err := c.ListWebhookDeliveriesWithResponse(ctx, sub.JSON201.SubscriptionId, nil)
		return err == nil && len(r.JSON200.Items) == 1 && r.JSON200.Items[0].DeliveryId == sent.JSON202.DeliveryId &&
			r.JSON200.Items[0].Status == "succeeded"
	})

	body := []byte(`{"timestamp":"2026-03-05T16:32:10.221Z","eventId":"evt_01kjzdf9zdec1b0mjavxbds9rf","payload":{"type":"form.submitted"}}`)
	other := "whsec_c2VjcmV0LW9mLTMyLWJ5dGVzLWZvci10ZXN0aW5nIQ=="
	for _, c := range []struct {
		name   string
		secret string
		at     time.Time
		body   []byte
	}{
		{"tampered body", secret, time.Now(), bytes.Replace(body, []byte("form.submitted"), []byte("form.enriched"), 1)},
		{"wrong secret", other, time.Now(), body},
		{"stale timestamp", secret, time.Now().Add(-6 * time.Minute), body},
	} {
		h := standardHeaders(t, c.secret, "evt_01kjzdf9zdec1b0mjavxbds9rf", c.at, body)
		req, _ := http.NewRequest("POST", url, bytes.NewReader(c.body))
		req.Header = h
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Errorf("%s: the receiver answered %d, want 401", c.name, res.StatusCode)
		}
	}
	rc.waitForN(t, "refused: webhooks: no signature matches", 2)
	rc.waitFor(t, "refused: webhooks: timestamp outside the tolerance")
}

// standardHeaders signs body as the webhooks service does (Standard Webhooks headers).
func standardHeaders(t *testing.T, secret, id string, at time.Time, body []byte) http.Header {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return h
}

// receiverProc is an example receiver running as a process, with the lines it printed.
type receiverProc struct {
	mu    sync.Mutex
	lines []string
}

// startReceiver starts a receiver command and waits until it prints ready.
func startReceiver(t *testing.T, name string, env []string, ready string, args ...string) *receiverProc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rc := &receiverProc{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(out)
		for s.Scan() {
			rc.mu.Lock()
			rc.lines = append(rc.lines, s.Text())
			rc.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	rc.waitFor(t, ready)
	return rc
}

// waitFor waits until the receiver printed a line that starts with prefix.
func (rc *receiverProc) waitFor(t *testing.T, prefix string) { t.Helper(); rc.waitForN(t, prefix, 1) }

// waitForN waits until the receiver printed n lines that start with prefix.
func (rc *receiverProc) waitForN(t *testing.T, prefix string, n int) {
	t.Helper()
	testwait.Eventually(t, 20*time.Second, fmt.Sprintf("the receiver to print %q %d times", prefix, n), func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		found := 0
		for _, l := range rc.lines {
			if strings.HasPrefix(l, prefix) {
				found++
			}
		}
		return found >= n
	})
}

// The TypeScript client's test against the whole system (clients/typescript/test/e2e,
// node's test runner): the same checks as TestGoClient, with the Node example receiver
// (examples/webhook-receiver/node). It needs `make ts-client` first; without its build it
// is skipped, unless E2E_REQUIRE_TS is set (make test sets it).
func TestTypeScriptClient(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "clients", "typescript")
	receiver := filepath.Join(root, "examples", "webhook-receiver", "node", "receiver.mjs")
	_, errBuilt := os.Stat(filepath.Join(dir, "dist", "test", "e2e", "client.e2e.test.js"))
	_, errDeps := os.Stat(filepath.Join(root, "examples", "webhook-receiver", "node", "node_modules", "@customerapi", "client"))
	node, errNode := exec.LookPath("node")
	if errBuilt != nil || errDeps != nil || errNode != nil {
		if os.Getenv("E2E_REQUIRE_TS") != "" {
			t.Fatalf("the TypeScript client is not built (make ts-client): %v %v %v", errBuilt, errDeps, errNode)
		}
		t.Skip("the TypeScript client is not built: make ts-client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "dist/test/e2e/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CUSTOMER_API_BASE_URL="+sys.base, "CUSTOMER_API_KEY="+newKey(t, nil), "WEBHOOK_RECEIVER="+receiver)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the TypeScript e2e test failed: %v", err)
	}
	if !strings.Contains(string(out), "pass 2") {
		t.Fatalf("the TypeScript e2e test did not run its 2 tests")
	}
}
