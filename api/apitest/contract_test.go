package apitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	hdr := func() http.Header {
		h := http.Header{}
		h.Set("X-Request-Id", "req_1")
		h.Set("Content-Type", "application/json")
		return h
	}
	topic := `{"topicId":"topic_1","title":"t","purpose":null,"sortOrder":0,"isDefault":false,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z","entries":[]}`
	envelope := func(status int, code, title string) string {
		return `{"code":"` + code + `","detail":"d","requestId":"req_1","status":` + strconv.Itoa(status) + `,"title":"` + title + `","type":"http://x/errors/` + strings.ToLower(code) + `"}`
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body               string
		ok                 bool
	}{
		{"valid topic", "GET", "/v0/topics/topic_1", 200, hdr(), topic, true},
		{"extra field", "GET", "/v0/topics/topic_1", 200, hdr(), strings.Replace(topic, `"entries"`, `"extra":1,"entries"`, 1), false},
		{"seconds timestamp", "GET", "/v0/topics/topic_1", 200, hdr(), strings.Replace(topic, "00.000Z", "00Z", 1), false},
		{"undocumented status", "GET", "/v0/topics/topic_1", 418, hdr(), envelope(418, "VALIDATION_ERROR", "I'm a teapot"), false},
		{"valid 404", "GET", "/v0/topics/x", 404, hdr(), envelope(404, "NOT_FOUND", "Not Found"), true},
		{"envelope status mismatch", "GET", "/v0/topics/x", 404, hdr(), envelope(400, "NOT_FOUND", "Not Found"), false},
		{"wrong code for status", "GET", "/v0/topics/x", 404, hdr(), envelope(404, "CONFLICT", "Not Found"), false},
		{"unknown route with envelope", "GET", "/v0/nope", 404, hdr(), envelope(404, "NOT_FOUND", "Not Found"), true},
		{"unknown route with 200", "GET", "/v0/nope", 200, hdr(), `{}`, false},
		{"no request id", "GET", "/v0/topics/topic_1", 200, http.Header{"Content-Type": {"application/json"}}, topic, false},
		{"page invariant", "GET", "/v0/topics", 200, hdr(), `{"items":[],"totalCount":0,"hasMore":true,"nextCursor":null}`, false},
		{"valid page", "GET", "/v0/topics", 200, hdr(), `{"items":[],"totalCount":0,"hasMore":false,"nextCursor":null}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://127.0.0.1:9/"+strings.TrimPrefix(tc.path, "/"), nil)
			err := c.Check(req, tc.status, tc.header, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// The nullable object and timestamp fields accept null and refuse other types, in the
// responses tests receive (the document writes them as type + nullable + allOf, which
// strict OpenAPI 3.0 tools and generators read as nullable too).
func TestNullableFields(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	hdr.Set("X-Request-Id", "req_1")
	hdr.Set("Content-Type", "application/json")
	example := func(schema string) map[string]any {
		var m map[string]any
		b, _ := json.Marshal(c.doc.Components.Schemas[schema].Value.Example)
		_ = json.Unmarshal(b, &m)
		return m
	}
	for _, tc := range []struct {
		name, path, schema, field string
		value                     any
		ok                        bool
	}{
		{"example as is", "/v0/pages/p/audiences/a", "Audience", "", nil, true},
		{"latestVersion null", "/v0/pages/p/audiences/a", "Audience", "latestVersion", nil, true},
		{"publishedVersion null", "/v0/pages/p/audiences/a", "Audience", "publishedVersion", nil, true},
		{"publishedVersion string", "/v0/pages/p/audiences/a", "Audience", "publishedVersion", "version_1", false},
		{"publishedVersion empty object", "/v0/pages/p/audiences/a", "Audience", "publishedVersion", map[string]any{}, false},
		{"latestVersion array", "/v0/pages/p/audiences/a", "Audience", "latestVersion", []any{}, false},
		{"metadataOverride string", "/v0/pages/p/audiences/a", "Audience", "metadataOverride", "x", false},
		{"nextAttemptAt null", "/v0/webhook_subscriptions/s/deliveries/d", "WebhookDelivery", "nextAttemptAt", nil, true},
		{"nextAttemptAt set", "/v0/webhook_subscriptions/s/deliveries/d", "WebhookDelivery", "nextAttemptAt", "2026-03-05T16:37:13.115Z", true},
		{"nextAttemptAt not a timestamp", "/v0/webhook_subscriptions/s/deliveries/d", "WebhookDelivery", "nextAttemptAt", "soon", false},
		{"nextAttemptAt number", "/v0/webhook_subscriptions/s/deliveries/d", "WebhookDelivery", "nextAttemptAt", 1772728633115, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := example(tc.schema)
			if tc.field != "" {
				body[tc.field] = tc.value
			}
			b, _ := json.Marshal(body)
			req := httptest.NewRequest("GET", "http://127.0.0.1:9"+tc.path, nil)
			err := c.Check(req, 200, hdr, b)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestStrictSchema(t *testing.T) {
	s, err := StrictSchema("FormSubmittedEventPayload")
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := json.Marshal(s.Example)
	var v map[string]any
	_ = json.Unmarshal(ex, &v)
	if err := s.VisitJSON(v); err != nil {
		t.Fatalf("example refused: %v", err)
	}
	v["undocumented"] = 1
	if s.VisitJSON(v) == nil {
		t.Fatal("an undocumented field passed the strict schema")
	}
	delete(v, "undocumented")
	v["fields"] = map[string]any{"anything": []any{1, "x"}} // fields stays open: additionalProperties: true
	if err := s.VisitJSON(v); err != nil {
		t.Fatalf("free-form fields refused: %v", err)
	}
	if _, err := StrictSchema("NoSuchSchema"); err == nil {
		t.Fatal("unknown schema: no error")
	}
}
