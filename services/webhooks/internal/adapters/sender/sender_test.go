package sender

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/customerapi/platform/services/webhooks/internal/adapters/ssrf"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/internal/domain/signing"
)

func job(t *testing.T, url string) domain.Job {
	t.Helper()
	secret, err := signing.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return domain.Job{EventID: "evt_1", URL: url, Secret: secret, Body: []byte(`{"eventId":"evt_1"}`), Active: true}
}

func newSender(timeout time.Duration) *Sender {
	return New(ssrf.NewGuard(ssrf.Policy{AllowPrivate: true}, nil, time.Second), timeout, 4)
}

func TestSendClassifiesAnswers(t *testing.T) {
	var redirectedTo atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("thanks")) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirectedTo.Add(1) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("é", 1<<20)))
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte{'a', 0, 0xff, 0xfe, 'b'})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := newSender(300 * time.Millisecond)
	defer s.Close()

	att, out := s.Send(context.Background(), job(t, srv.URL+"/ok"))
	if !out.Success || out.Result != "success" || *att.StatusCode != 200 || att.Error != nil || *att.ResponseSnippet != "thanks" {
		t.Fatalf("ok: %+v %+v", att, out)
	}
	att, out = s.Send(context.Background(), job(t, srv.URL+"/redirect"))
	if out.Success || *att.StatusCode != 302 || !strings.Contains(*att.Error, "redirect not followed") || redirectedTo.Load() != 0 {
		t.Fatalf("redirect: %+v %+v", att, out)
	}
	att, out = s.Send(context.Background(), job(t, srv.URL+"/gone"))
	if !out.Gone || out.Success || *att.StatusCode != 410 {
		t.Fatalf("gone: %+v %+v", att, out)
	}
	att, out = s.Send(context.Background(), job(t, srv.URL+"/busy"))
	if out.RetryAfter != 2*time.Minute || *att.StatusCode != 503 || out.Result != "http_error" {
		t.Fatalf("busy: %+v %+v", att, out)
	}
	start := time.Now()
	att, out = s.Send(context.Background(), job(t, srv.URL+"/slow"))
	if out.Result != "timeout" || att.StatusCode != nil || !strings.Contains(*att.Error, "no answer within 300ms") || time.Since(start) > time.Second {
		t.Fatalf("slow: %+v %+v after %s", att, out, time.Since(start))
	}
	att, out = s.Send(context.Background(), job(t, srv.URL+"/big"))
	if !out.Success || len(*att.ResponseSnippet) > SnippetBytes || !utf8.ValidString(*att.ResponseSnippet) ||
		!strings.HasPrefix(*att.ResponseSnippet, "éé") {
		t.Fatalf("big: %d bytes, %+v", len(*att.ResponseSnippet), out)
	}
	att, _ = s.Send(context.Background(), job(t, srv.URL+"/binary"))
	if sn := *att.ResponseSnippet; strings.ContainsRune(sn, 0) || !utf8.ValidString(sn) || !strings.HasPrefix(sn, "a") {
		t.Fatalf("binary snippet %q", sn)
	}
	// Nothing listens on a port just released.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	att, out = s.Send(context.Background(), job(t, "http://"+addr+"/"))
	if out.Result != "network_error" || att.StatusCode != nil || strings.Contains(*att.Error, "Post ") {
		t.Fatalf("refused connection: %+v %+v", att, out)
	}
}

// Attempts to one receiver reuse pooled keep-alive connections.
func TestSendReusesConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	s := newSender(time.Second)
	defer s.Close()
	for i := 0; i < 20; i++ {
		if _, out := s.Send(context.Background(), job(t, srv.URL)); !out.Success {
			t.Fatal(out)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 20 sequential attempts", n)
	}
}

func TestSendRefusesPrivateTargetsWhenNotAllowed(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	s := New(ssrf.NewGuard(ssrf.Policy{}, nil, time.Second), time.Second, 4)
	att, out := s.Send(context.Background(), job(t, srv.URL))
	if out.Result != "refused" || att.StatusCode != nil || !strings.Contains(*att.Error, "loopback") || hits.Load() != 0 {
		t.Fatalf("%+v %+v", att, out)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"30":                            30 * time.Second,
		" 5 ":                           5 * time.Second,
		"0":                             0,
		"-3":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:01:00 GMT": time.Minute,
		"Wed, 31 Dec 2025 23:00:00 GMT": 0, // in the past
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("%q: %s, want %s", v, got, want)
		}
	}
}

// The attempt of a test event's delivery (Job.Test) carries X-Webhook-Test: true; any
// other attempt has no such header.
func TestSendMarksTestDeliveriesOnly(t *testing.T) {
	got := make(chan []string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values(domain.TestHeader)
	}))
	defer srv.Close()
	s := newSender(time.Second)
	defer s.Close()
	for _, test := range []bool{true, false} {
		j := job(t, srv.URL)
		j.Test = test
		if _, out := s.Send(context.Background(), j); !out.Success {
			t.Fatalf("attempt (test %v): %+v", test, out)
		}
		h := <-got
		if want := map[bool]string{true: "[true]", false: "[]"}[test]; fmt.Sprint(h) != want {
			t.Errorf("Job.Test %v: X-Webhook-Test %v; want %s", test, h, want)
		}
	}
}
