package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/gateway/internal/auth"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/tenant"
)

// Options tune the upstream connections.
type Options struct {
	// Timeout bounds one upstream exchange; past it the caller gets 503.
	Timeout time.Duration
	// DialTimeout bounds connecting to an upstream.
	DialTimeout time.Duration
	// MaxConns bounds the pooled connections per upstream.
	MaxConns int
}

// Upstream is one service with its connection pool.
type Upstream struct {
	Name   string
	URL    *url.URL
	client *fasthttp.HostClient
}

// NewUpstream parses the service's base URL and sets up its pool.
func NewUpstream(name, rawURL string, o Options) (*Upstream, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("proxy: upstream %s: %q is not an http(s) URL", name, rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	dialTimeout := o.DialTimeout
	return &Upstream{Name: name, URL: u, client: &fasthttp.HostClient{
		Addr:                          addr,
		Name:                          "customer-api-gateway",
		IsTLS:                         u.Scheme == "https",
		MaxConns:                      o.MaxConns,
		ReadTimeout:                   o.Timeout,
		WriteTimeout:                  o.Timeout,
		MaxIdleConnDuration:           60 * time.Second,
		MaxConnWaitTimeout:            o.DialTimeout,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
		Dial: func(addr string) (net.Conn, error) {
			return fasthttp.DialTimeout(addr, dialTimeout)
		},
	}}, nil
}

// Proxy is the forwarding handler.
type Proxy struct {
	table     table
	upstreams map[string]*Upstream
	timeout   time.Duration
}

// New returns a Proxy over the given upstreams (by service name). A route whose service
// has no upstream answers 503.
func New(upstreams map[string]*Upstream, o Options) *Proxy {
	return &Proxy{table: newTable(Routes), upstreams: upstreams, timeout: o.Timeout}
}

// hopHeaders are meaningful only for one connection and never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// Handler forwards the request to its service and copies the answer back.
func (p *Proxy) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		service, ok := p.table.match(c.Path())
		if !ok {
			return apierror.NotFound("no such route")
		}
		up := p.upstreams[service]
		if up == nil {
			return apierror.Unavailable("the " + service + " service is not available")
		}
		req := c.Request()
		if len(req.Body()) > apierror.MaxBodyBytes && !isMultipart(c) {
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
				Message: "request body exceeds the limit of 1 MiB"})
		}
		key := auth.Key(c)
		prepare(c, req, up, key.TenantIDs[0], key.ID)
		closeAfter := req.Header.ConnectionClose()
		req.Header.ResetConnectionClose()

		resp := c.Response()
		err := up.client.DoTimeout(req, resp, p.timeout)
		if closeAfter {
			req.Header.SetConnectionClose()
		}
		if err != nil {
			resp.Reset()
			return upstreamError(service, err)
		}
		// The upstream connection's fate is not the client's (fasthttp keeps Connection
		// and Transfer-Encoding to itself; the services send no other hop-by-hop header).
		resp.Header.ResetConnectionClose()
		if len(resp.Header.Peek(requestid.Header)) == 0 { // services echo it; make sure
			requestid.Stamp(c, requestid.Ensure(c))
		}
		return nil
	}
}

// prepare rewrites the incoming request in place into the upstream request: client-sent
// internal headers and the API key are dropped, the tenant, key ID, request ID and trace
// context are set.
func prepare(c *fiber.Ctx, req *fasthttp.Request, up *Upstream, tenantID, keyID string) {
	// One pass finds what to drop: client-sent internal headers, hop-by-hop headers and
	// the API key, which the services never need to see.
	var drop []string
	req.Header.VisitAll(func(k, _ []byte) {
		name := string(k)
		if tenant.IsInternal(name) || isHop(name) || strings.EqualFold(name, auth.HeaderAPIKey) {
			drop = append(drop, name)
		}
	})
	for _, k := range drop {
		req.Header.Del(k)
	}
	// SetCanonical skips fasthttp's value sanitising: these values are ours and already
	// safe (validated tenant IDs, generated key IDs, sane request IDs).
	req.Header.SetCanonical([]byte(tenant.Header), []byte(tenantID))
	req.Header.SetCanonical([]byte(tenant.KeyHeader), []byte(keyID))
	req.Header.SetCanonical([]byte(requestid.Header), []byte(requestid.Ensure(c)))
	if ip := c.IP(); ip != "" {
		if prior := string(req.Header.Peek("X-Forwarded-For")); prior != "" {
			req.Header.Set("X-Forwarded-For", prior+", "+ip)
		} else {
			req.Header.Set("X-Forwarded-For", ip)
		}
	}
	req.Header.Set("X-Forwarded-Proto", c.Protocol())
	telemetry.Propagator.Inject(c.UserContext(), requestHeaderCarrier{&req.Header})
	req.SetHost(up.URL.Host)
	if up.URL.Path != "" && up.URL.Path != "/" {
		req.SetRequestURI(strings.TrimRight(up.URL.Path, "/") + string(req.RequestURI()))
	}
}

func isHop(name string) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

func upstreamError(service string, err error) *apierror.Error {
	var e *apierror.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, fasthttp.ErrNoFreeConns):
		e = apierror.Unavailable("the " + service + " service did not answer in time")
	default:
		e = apierror.Unavailable("the " + service + " service is unavailable")
	}
	return e.WithHeader(fiber.HeaderRetryAfter, "1")
}

// requestHeaderCarrier adapts fasthttp request headers for trace-context injection.
type requestHeaderCarrier struct{ h *fasthttp.RequestHeader }

func (r requestHeaderCarrier) Get(key string) string { return string(r.h.Peek(key)) }
func (r requestHeaderCarrier) Set(key, value string) { r.h.Set(key, value) }
func (r requestHeaderCarrier) Keys() []string {
	var out []string
	r.h.VisitAll(func(k, _ []byte) { out = append(out, string(k)) })
	return out
}

// Ready checks an upstream's /readyz.
func (u *Upstream) Ready(timeout time.Duration) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(strings.TrimRight(u.URL.String(), "/") + "/readyz")
	req.Header.SetMethod(fasthttp.MethodGet)
	if err := u.client.DoTimeout(req, resp, timeout); err != nil {
		return fmt.Errorf("%s: %w", u.Name, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("%s: readyz answered %d", u.Name, resp.StatusCode())
	}
	return nil
}

func isMultipart(c *fiber.Ctx) bool {
	return strings.HasPrefix(strings.ToLower(c.Get(fiber.HeaderContentType)), "multipart/")
}
