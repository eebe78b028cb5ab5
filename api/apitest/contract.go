// Package apitest checks HTTP responses against the OpenAPI document, so a response that
// drifts from the contract fails the test that received it. Its Client sends requests
// and checks every response it gets.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/customerapi/platform/api"
)

const contractHost = "contract.test"

// Contract validates exchanges against the OpenAPI document.
type Contract struct {
	doc      *openapi3.T
	router   routers.Router
	envelope *openapi3.Schema
}

// Load parses and validates the document, and makes its responses strict (see
// closeResponses).
func Load() (*Contract, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("apitest: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("apitest: invalid document: %w", err)
	}
	closeResponses(doc)
	// Route on one neutral server so any test address matches.
	doc.Servers = openapi3.Servers{{URL: "http://" + contractHost}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("apitest: router: %w", err)
	}
	env := doc.Components.Schemas["ErrorEnvelope"]
	if env == nil || env.Value == nil {
		return nil, errors.New("apitest: document lacks ErrorEnvelope")
	}
	return &Contract{doc: doc, router: router, envelope: env.Value}, nil
}

// Check validates one response (status, documented headers, body schema) to req, plus the
// rules every response obeys: an X-Request-Id header; for errors, an envelope whose status,
// title, type and requestId agree with the response; for lists, hasMore exactly when
// nextCursor is set. Requests to paths the document does not have must get an envelope.
func (c *Contract) Check(req *http.Request, status int, header http.Header, body []byte) error {
	if header.Get("X-Request-Id") == "" {
		return errors.New("response has no X-Request-Id header")
	}
	if status >= 400 {
		if err := c.checkEnvelope(status, header, body); err != nil {
			return err
		}
	}
	r := req.Clone(context.Background())
	u := *req.URL
	u.Scheme, u.Host = "http", contractHost
	r.URL, r.Host = &u, contractHost
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if status >= 400 {
			return nil // an unknown path or method: the envelope was checked above
		}
		return fmt.Errorf("%s %s answered %d but the document has no such operation", req.Method, req.URL.Path, status)
	}
	// The shared default answer (OtherErrors) stands for the statuses it lists, not for
	// any status: one the operation does not declare must be one of those.
	if route.Operation.Responses.Value(strconv.Itoa(status)) == nil && status >= 400 && !defaultStatuses[status] {
		return fmt.Errorf("%s %s answered %d, which the operation does not declare (its default answer covers %v)",
			req.Method, req.URL.Path, status, sortedStatuses())
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s → %d does not match the document: %w", req.Method, req.URL.Path, status, err)
	}
	if status < 300 && len(body) > 0 {
		return checkPage(body)
	}
	return nil
}

// defaultStatuses are the statuses the document's shared default answer, OtherErrors,
// lists: those any request can get.
var defaultStatuses = map[int]bool{401: true, 403: true, 415: true, 429: true, 431: true, 500: true, 503: true}

// sortedStatuses lists defaultStatuses in order.
func sortedStatuses() []int {
	out := make([]int, 0, len(defaultStatuses))
	for s := range defaultStatuses {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func (c *Contract) checkEnvelope(status int, header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error response has Content-Type %q", ct)
	}
	var generic any
	if err := json.Unmarshal(body, &generic); err != nil {
		return fmt.Errorf("error body is not JSON: %s", body)
	}
	if err := c.envelope.VisitJSON(generic); err != nil {
		return fmt.Errorf("error body is not an ErrorEnvelope: %w\n%s", err, body)
	}
	var e struct {
		Code      string `json:"code"`
		Status    int    `json:"status"`
		Title     string `json:"title"`
		Type      string `json:"type"`
		RequestID string `json:"requestId"`
	}
	_ = json.Unmarshal(body, &e)
	switch {
	case e.Status != status:
		return fmt.Errorf("envelope status %d != HTTP status %d", e.Status, status)
	case e.Title != http.StatusText(status):
		return fmt.Errorf("envelope title %q != %q", e.Title, http.StatusText(status))
	case !strings.HasSuffix(e.Type, "/errors/"+strings.ToLower(e.Code)):
		return fmt.Errorf("envelope type %q does not end in /errors/%s", e.Type, strings.ToLower(e.Code))
	case e.RequestID != header.Get("X-Request-Id"):
		return fmt.Errorf("envelope requestId %q != X-Request-Id %q", e.RequestID, header.Get("X-Request-Id"))
	}
	want := map[int]string{400: "VALIDATION_ERROR", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND",
		405: "METHOD_NOT_ALLOWED", 409: "CONFLICT", 412: "PRECONDITION_FAILED", 429: "RATE_LIMITED", 500: "INTERNAL",
		503: "SERVICE_UNAVAILABLE"}
	if w, ok := want[status]; ok && e.Code != w {
		return fmt.Errorf("status %d carries code %s, want %s", status, e.Code, w)
	}
	return nil
}

// checkPage enforces the pagination invariant on list bodies.
func checkPage(body []byte) error {
	var p struct {
		Items      *json.RawMessage `json:"items"`
		HasMore    *bool            `json:"hasMore"`
		NextCursor *string          `json:"nextCursor"`
	}
	if json.Unmarshal(body, &p) != nil || p.Items == nil || p.HasMore == nil {
		return nil
	}
	if *p.HasMore != (p.NextCursor != nil) {
		return fmt.Errorf("hasMore=%v but nextCursor=%v", *p.HasMore, p.NextCursor)
	}
	return nil
}

// Response is a received response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r *Response) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Map decodes the body as a JSON object (nil if it is not one).
func (r *Response) Map() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// String returns a short description for failure messages.
func (r *Response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// Raw is a request body sent verbatim.
type Raw string

// TB is the part of testing.TB the client needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Client sends requests to Base and checks every response against the contract.
type Client struct {
	T        TB
	Base     string
	Header   http.Header
	Contract *Contract
	HTTP     *http.Client
	// Prepare, when set, is applied to every request just before it is sent, after its
	// headers are set (servicetest.Service.Sign signs it as the gateway would).
	Prepare func(*http.Request)
}

// With returns a copy of the client that also sends header name: value ("" removes it).
func (c *Client) With(name, value string) *Client {
	cp := *c
	cp.Header = c.Header.Clone()
	if cp.Header == nil {
		cp.Header = http.Header{}
	}
	if value == "" {
		cp.Header.Del(name)
	} else {
		cp.Header.Set(name, value)
	}
	return &cp
}

// Do sends a request; body is marshalled as JSON unless it is Raw or nil. It fails the
// test on transport errors and on any contract violation.
func (c *Client) Do(method, path string, body any) *Response {
	c.T.Helper()
	resp, err := c.do(method, path, body)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// Try is Do that returns transport and contract errors instead of failing the test (for
// requests sent while a service is being killed, say).
func (c *Client) Try(method, path string, body any) (*Response, error) {
	return c.do(method, path, body)
}

func (c *Client) do(method, path string, body any) (*Response, error) {
	var rd io.Reader
	var raw []byte
	switch b := body.(type) {
	case nil:
	case Raw:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if raw != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Prepare != nil {
		c.Prepare(req)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: b}
	if c.Contract != nil {
		req.Body = io.NopCloser(bytes.NewReader(raw))
		if err := c.Contract.Check(req, res.StatusCode, res.Header, b); err != nil {
			return out, fmt.Errorf("contract: %w\nbody: %s", err, b)
		}
	}
	return out, nil
}

// Query builds a path with query parameters.
func Query(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// StrictSchema returns the schema of components named name with every object in it
// closed (see closeResponses): for tests that check a webhook payload or another body
// against the document and want an undocumented field to fail.
func StrictSchema(name string) (*openapi3.Schema, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("apitest: load: %w", err)
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return nil, fmt.Errorf("apitest: the document has no schema %s", name)
	}
	closeSchema(ref, map[*openapi3.Schema]bool{})
	return ref.Value, nil
}

// closeResponses makes every object schema that a response can contain refuse the
// properties it does not list, unless it says what extra properties may hold. The
// document leaves response objects open, so that a client built from it keeps working
// when a field is added (docs/api.md, "Forward compatibility"); the platform's own tests
// are stricter and hold every response to exactly the fields documented today.
func closeResponses(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					closeSchema(mt.Schema, seen)
				}
			}
		}
	}
}

// closeSchema closes s and every schema in it: an object that lists properties and does
// not say what other properties may hold gets additionalProperties: false.
func closeSchema(s *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
	if s == nil || s.Value == nil || seen[s.Value] {
		return
	}
	v := s.Value
	seen[v] = true
	if len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
		closed := false
		v.AdditionalProperties.Has = &closed
	}
	for _, p := range v.Properties {
		closeSchema(p, seen)
	}
	closeSchema(v.Items, seen)
	closeSchema(v.AdditionalProperties.Schema, seen)
	closeSchema(v.Not, seen)
	for _, l := range [][]*openapi3.SchemaRef{v.AllOf, v.OneOf, v.AnyOf} {
		for _, x := range l {
			closeSchema(x, seen)
		}
	}
}
