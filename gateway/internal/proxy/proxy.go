package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/gateway/internal/auth"
	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/bodylimit"
	"github.com/customerapi/platform/libs/inflight"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/limitio"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/telemetry"
	"github.com/customerapi/platform/libs/tenant"
)

// Options tune the upstream connections.
type Options struct {
	// Signer signs the internal headers of every forwarded request (INTERNAL_AUTH_SECRET);
	// the services refuse requests it did not sign.
	Signer *internalauth.Signer
	// Timeout bounds one upstream exchange; past it the caller gets 503.
	Timeout time.Duration
	// DialTimeout bounds connecting to an upstream.
	DialTimeout time.Duration
	// MaxConns bounds the pooled connections per upstream.
	MaxConns int
	// UploadMaxConns bounds the connections per upstream that carry streamed uploads
	// (MaxConns when 0).
	UploadMaxConns int
	// DownloadMaxConns bounds the connections per upstream that carry signed downloads
	// (MaxConns when 0): a pool of their own, so that slow downloads, which need no key,
	// cannot take the connections uploads need.
	DownloadMaxConns int
	// TransferTimeout bounds one streamed upload or download (both directions, whole).
	TransferTimeout time.Duration
	// MaxUploadBytes is the largest file an upload route accepts; the gateway lets a
	// body of up to this plus UploadOverhead through and refuses larger ones.
	MaxUploadBytes int64
	// MaxResponseBytes is the largest answer body the gateway takes from a service
	// (DefaultMaxResponseBytes when 0); a larger one is a 503. Signed downloads stream
	// and are not bounded by it.
	MaxResponseBytes int
	// UploadsPerTenant bounds the uploads of one tenant streaming through the gateway at
	// once (0 or less: no cap); one more is a 429 before its body is read. A stalled
	// upload holds a gateway connection and an upstream one for up to TransferTimeout,
	// and the service's own cap cannot answer while the gateway still sends it the body.
	UploadsPerTenant int
	// Refusals, optional, counts the uploads refused by UploadsPerTenant.
	Refusals *observe.Refusals
}

// DefaultUploadsPerTenant is the cap of a tenant's uploads in flight through one gateway
// replica, the assets service's own default (ASSETS_UPLOADS_PER_TENANT).
const DefaultUploadsPerTenant = 4

// uploadRetryAfter is the Retry-After of an upload refused by the tenant's cap.
const uploadRetryAfter = "5"

// DefaultMaxUploadBytes is the upload limit when Options leave it unset (50 MiB).
const DefaultMaxUploadBytes = 50 << 20

// DefaultMaxResponseBytes is the answer limit when Options leave it unset (16 MiB): the
// services' answers are a few MiB at most, and each answer is buffered whole.
const DefaultMaxResponseBytes = 16 << 20

// maxResponse is MaxResponseBytes, or its default when unset.
func (o Options) maxResponse() int {
	if o.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return o.MaxResponseBytes
}

// UploadOverhead is what a multipart upload may carry beyond its file: text fields, part
// headers and boundaries.
const UploadOverhead = 1 << 20

// Upstream is one service with its connection pools.
type Upstream struct {
	Name   string
	URL    *url.URL
	client *fasthttp.HostClient
	// transfer carries streamed uploads: its timeouts fit large bodies, and its
	// connections do not hold up the pool of ordinary requests.
	transfer *fasthttp.HostClient
	// download carries signed downloads, which anyone holding a link can keep open as
	// long as they read slowly: their own pool, so that they hold up neither.
	download *fasthttp.HostClient
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
	maxResponse := o.maxResponse()
	// maxBody bounds a buffered answer; a streamed one (downloads) ignores it.
	newClient := func(timeout time.Duration, maxConns, maxBody int) *fasthttp.HostClient {
		if maxConns <= 0 {
			maxConns = o.MaxConns
		}
		hc := &fasthttp.HostClient{
			Addr:                          addr,
			Name:                          "customer-api-gateway",
			IsTLS:                         u.Scheme == "https",
			MaxConns:                      maxConns,
			ReadTimeout:                   timeout,
			WriteTimeout:                  timeout,
			MaxIdleConnDuration:           60 * time.Second,
			MaxConnWaitTimeout:            o.DialTimeout,
			MaxResponseBodySize:           maxBody,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			NoDefaultUserAgentHeader:      true,
			Dial: func(addr string) (net.Conn, error) {
				return fasthttp.DialTimeout(addr, dialTimeout)
			},
		}
		hc.RetryIfErr = func(req *fasthttp.Request, attempts int, err error) (bool, bool) {
			resetTimeout, retry := retryClosedConn(req, attempts, err)
			if retry {
				// The service closed a pooled connection: it restarted, or a replica
				// went away, and the other idle connections are as stale as this one.
				// Drop them, so that the retry dials afresh instead of taking the next
				// stale one (after a burst there are as many as there were requests).
				hc.CloseIdleConnections()
			}
			return resetTimeout, retry
		}
		return hc
	}
	transferTimeout := o.TransferTimeout
	if transferTimeout <= 0 {
		transferTimeout = o.Timeout
	}
	return &Upstream{Name: name, URL: u, client: newClient(o.Timeout, o.MaxConns, maxResponse),
		transfer: newClient(transferTimeout, o.UploadMaxConns, maxResponse),
		download: newClient(transferTimeout, o.DownloadMaxConns, 0)}, nil
}

// retryClosedConn sends a request once more, on another connection, when the upstream
// closed its connection without answering: above all a pooled keep-alive connection the
// service closed while idle (it restarted, or a replica shut down), which would otherwise
// fail the first request of every stale connection with a 503 after each deploy. Any
// method is retried, once: in the rare case where the service read the request and died
// before answering, the retry does what the client would do on the 503 it would get.
// Other failures (timeouts, refused connections) are answered with 503 at once.
func retryClosedConn(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
	return false, attempts == 1 && closed
}

// Proxy is the forwarding handler.
type Proxy struct {
	table     table
	upstreams map[string]*Upstream
	timeout   time.Duration
	transfer  time.Duration
	maxUpload int64
	// maxResponse is the answer limit, for the 503 that names it.
	maxResponse int
	signer      *internalauth.Signer
	// uploads counts each tenant's uploads in flight.
	uploads  *inflight.Limiter
	refusals *observe.Refusals
}

// New returns a Proxy over the given upstreams (by service name). A route whose service
// has no upstream answers 503.
func New(upstreams map[string]*Upstream, o Options) *Proxy {
	transfer := o.TransferTimeout
	if transfer <= 0 {
		transfer = o.Timeout
	}
	maxUpload := o.MaxUploadBytes
	if maxUpload <= 0 {
		maxUpload = DefaultMaxUploadBytes
	}
	maxResponse := o.maxResponse()
	return &Proxy{table: newTable(Routes), upstreams: upstreams, timeout: o.Timeout, transfer: transfer,
		maxUpload: maxUpload, maxResponse: maxResponse, signer: o.Signer,
		uploads: inflight.New(o.UploadsPerTenant, 0), refusals: o.Refusals}
}

// hopHeaders are meaningful only for one connection and never forwarded.
// Expect is answered by the gateway itself (fasthttp sends 100 Continue to the client).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade", "Expect"}

// Handler forwards the request to its service and copies the answer back. Bodies are
// read whole under the 1 MiB JSON limit, except on upload routes, where they stream
// through to the service as they arrive.
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
		key := auth.Key(c)
		client, timeout := up.client, p.timeout
		var capped *limitio.Reader
		if IsUpload(c.Method(), c.Path()) {
			release, err := p.uploads.Acquire(key.TenantIDs[0])
			if err != nil {
				return p.tooManyUploads(c)
			}
			defer release()
			if capped, err = p.admitUpload(c); err != nil {
				return err
			}
			client, timeout = up.transfer, p.transfer
		} else if err := bodylimit.Buffer(c.Request()); err != nil {
			return err
		}
		prepare(c, req, up)
		p.sign(c, req, key.TenantIDs[0], key.ID)
		err := forward(c, client, timeout)
		if err != nil && capped != nil && capped.Over() {
			return uploadTooBig(p.maxUpload)
		}
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			return answerTooBig(service, p.maxResponse)
		}
		if err != nil {
			return upstreamError(service, err)
		}
		return nil
	}
}

// Current fetches path's representation from its service as the caller (tenant and key
// of c), for the check of a conditional write: the status and the body. c's own request
// and answer are left as they are.
func (p *Proxy) Current(c *fiber.Ctx, path string) (int, []byte, error) {
	service, ok := p.table.match(path)
	if !ok {
		return fiber.StatusNotFound, nil, nil
	}
	up := p.upstreams[service]
	if up == nil {
		return 0, nil, apierror.Unavailable("the " + service + " service is not available")
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	c.Request().Header.CopyTo(&req.Header)
	req.Header.SetMethod(fiber.MethodGet)
	for _, h := range []string{fiber.HeaderContentType, fiber.HeaderContentEncoding, fiber.HeaderIfMatch,
		fiber.HeaderIfNoneMatch, "Idempotency-Key"} {
		req.Header.Del(h)
	}
	req.Header.SetContentLength(0)
	req.SetRequestURI(path)
	prepare(c, req, up)
	key := auth.Key(c)
	p.sign(c, req, key.TenantIDs[0], key.ID)
	if err := up.client.DoTimeout(req, resp, p.timeout); err != nil {
		return 0, nil, upstreamError(service, err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// answerTooBig is the 503 for a service's answer over the limit: the gateway drops it
// unread rather than hold it, and names the limit so the error log says what happened.
// No Retry-After: the same request gets the same answer.
func answerTooBig(service string, limit int) *apierror.Error {
	return apierror.Unavailable(fmt.Sprintf("the %s service's answer exceeds the gateway's limit of %d bytes (UPSTREAM_MAX_RESPONSE_BYTES)",
		service, limit))
}

// Files serves signed downloads without an API key: GET or HEAD of FilesPrefix + token
// goes to the assets service's FilesUpstreamPath + token, with no tenant (the token is
// the authorisation), and the file streams back to the client without being buffered,
// over the download pool. No key means no key's rate limit: downloads instead count
// against limits per link and per client address (the connection's remote address; no
// header is trusted for it), and one past either cap is a 429 with Retry-After.
func (p *Proxy) Files(limits *Downloads) fiber.Handler {
	return func(c *fiber.Ctx) error {
		req := c.Request()
		if cl := req.Header.ContentLength(); cl > 0 || cl == -1 { // a length, or chunked
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
				Message: "a download takes no request body"})
		}
		up := p.upstreams[FilesService]
		if up == nil {
			return apierror.Unavailable("the " + FilesService + " service is not available")
		}
		token := c.Params("token")
		release, err := limits.admit(token, c.Context().RemoteIP())
		if err != nil {
			return err
		}
		prepare(c, req, up)
		p.sign(c, req, "", "") // no tenant: the assets service still knows it came from here
		base := ""
		if up.URL.Path != "" && up.URL.Path != "/" {
			base = strings.TrimRight(up.URL.Path, "/")
		}
		// The query string is dropped: the token carries everything.
		req.SetRequestURI(base + FilesUpstreamPath + url.PathEscape(token))
		if err := streamDownload(c, up.download, p.transfer, release); err != nil {
			return upstreamError(FilesService, err)
		}
		return nil
	}
}

// forward sends the prepared request upstream and leaves the answer in c's response.
func forward(c *fiber.Ctx, client *fasthttp.HostClient, timeout time.Duration) error {
	req, resp := c.Request(), c.Response()
	closeAfter := req.Header.ConnectionClose()
	req.Header.ResetConnectionClose()
	err := client.DoTimeout(req, resp, timeout)
	if closeAfter {
		req.Header.SetConnectionClose()
	}
	if err != nil {
		resp.Reset()
		return err
	}
	// The upstream connection's fate is not the client's (fasthttp keeps Connection
	// and Transfer-Encoding to itself; the services send no other hop-by-hop header).
	resp.Header.ResetConnectionClose()
	if len(resp.Header.Peek(requestid.Header)) == 0 { // services echo it; make sure
		requestid.Stamp(c, requestid.Ensure(c))
	}
	return nil
}

// tooManyUploads is the 429 of an upload past its tenant's cap, answered before any of
// its body is read; the connection is closed after it rather than drained, so a
// stalled upload costs nothing more.
func (p *Proxy) tooManyUploads(c *fiber.Ctx) *apierror.Error {
	p.refusals.Inc(observe.UploadsPerTenant)
	c.Context().SetConnectionClose()
	return apierror.TooManyAtOnce(fmt.Sprintf("too many uploads of your tenant at once (at most %d); retry after %s s",
		p.uploads.PerKey(), uploadRetryAfter), uploadRetryAfter)
}

func uploadTooBig(maxUpload int64) *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{"file"},
		Message: fmt.Sprintf("the file exceeds the upload limit of %d bytes", maxUpload)})
}

// admitUpload lets an upload's body stream through: it refuses a declared size over the
// limit, gives the transfer its own read deadline, and caps a body of unknown size.
func (p *Proxy) admitUpload(c *fiber.Ctx) (*limitio.Reader, error) {
	req := c.Request()
	limit := p.maxUpload + UploadOverhead
	_ = c.Context().SetReadDeadline(time.Now().Add(p.transfer))
	cl := req.Header.ContentLength()
	if cl > 0 && int64(cl) > limit {
		// Read what is sent (bounded) before answering, so the client reads the answer.
		if s := req.BodyStream(); s != nil {
			_, _ = io.CopyN(io.Discard, s, limit)
		}
		return nil, uploadTooBig(p.maxUpload)
	}
	if cl >= 0 || !req.IsBodyStream() {
		return nil, nil // a known length: the upstream gets exactly that many bytes
	}
	capped := limitio.NewReader(req.BodyStream(), limit, errUploadTooLarge)
	req.SetBodyStream(capped, -1)
	return capped, nil
}

// errUploadTooLarge fails the upstream transfer of a chunked upload past the limit.
var errUploadTooLarge = errors.New("upload exceeds the limit")

// sign adds the tenant and key ID (when not empty) and the signature over them and the
// request ID, which prepare has set (internalauth.Stamp, without its allocations).
func (p *Proxy) sign(c *fiber.Ctx, req *fasthttp.Request, tenantID, keyID string) {
	if p.signer == nil {
		return // the services refuse the request: INTERNAL_AUTH_SECRET is required
	}
	if tenantID != "" {
		req.Header.Set(internalauth.TenantHeader, tenantID)
	}
	if keyID != "" {
		req.Header.Set(internalauth.KeyHeader, keyID)
	}
	var buf [96]byte
	sig := p.signer.AppendSignature(buf[:0],
		internalauth.Claims{TenantID: tenantID, KeyID: keyID, RequestID: requestid.Ensure(c)}, time.Now())
	req.Header.SetCanonical(signatureHeader, sig)
}

var signatureHeader = []byte(internalauth.SignatureHeader)

// prepare rewrites the incoming request in place into the upstream request: client-sent
// internal headers, hop-by-hop headers and the API key are dropped, the request ID and
// trace context are set. The caller adds the tenant when there is one. It runs on every
// request, so it works on the header bytes without allocating.
func prepare(c *fiber.Ctx, req *fasthttp.Request, up *Upstream) {
	// One pass finds what to drop: client-sent internal headers, hop-by-hop headers and
	// the API key, which the services never need to see. The names are copied (deleting
	// moves the header's own bytes), into a stack buffer unless there are many.
	var nameBuf [128]byte
	var ends [8]int
	names, drop := nameBuf[:0], ends[:0]
	for k := range req.Header.All() {
		if isInternal(k) || isHop(k) || equalFold(k, auth.HeaderAPIKey) {
			names = append(names, k...)
			drop = append(drop, len(names))
		}
	}
	from := 0
	for _, to := range drop {
		req.Header.DelBytes(names[from:to])
		from = to
	}
	req.Header.SetCanonical(requestIDHeader, []byte(requestid.Ensure(c)))
	var buf [160]byte
	// The client's address (c.IP(): the gateway trusts no forwarding header of its own
	// clients) after any the client sent.
	v := buf[:0]
	if prior := req.Header.Peek("X-Forwarded-For"); len(prior) > 0 {
		v = append(append(v, prior...), ", "...)
	}
	ip := c.Context().RemoteIP()
	if a, ok := netip.AddrFromSlice(ip); ok {
		v = a.Unmap().AppendTo(v)
	} else {
		v = append(v, ip.String()...)
	}
	req.Header.SetCanonical(forwardedForHeader, v)
	req.Header.SetCanonical(forwardedProtoHeader, []byte(c.Protocol()))
	ctx := c.UserContext()
	if sc, simple := telemetry.InjectSimple(ctx); !simple {
		telemetry.Propagator.Inject(ctx, requestHeaderCarrier{&req.Header})
	} else if sc.IsValid() {
		req.Header.SetBytesV(telemetry.TraceparentHeader, telemetry.AppendTraceparent(buf[:0], sc))
	}
	req.SetHost(up.URL.Host)
	if up.URL.Path != "" && up.URL.Path != "/" {
		req.SetRequestURI(strings.TrimRight(up.URL.Path, "/") + string(req.RequestURI()))
	}
}

var (
	requestIDHeader      = []byte(requestid.Header)
	forwardedForHeader   = []byte("X-Forwarded-For")
	forwardedProtoHeader = []byte("X-Forwarded-Proto")
)

// isInternal reports whether a header name starts with the internal prefix, in any case
// (tenant.IsInternal on bytes).
func isInternal(name []byte) bool {
	return len(name) >= len(tenant.InternalPrefix) && equalFold(name[:len(tenant.InternalPrefix)], tenant.InternalPrefix)
}

func isHop(name []byte) bool {
	for _, h := range hopHeaders {
		if equalFold(name, h) {
			return true
		}
	}
	return false
}

// equalFold is strings.EqualFold of ASCII header names, over bytes.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
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
	return e.WithCause(err).WithHeader(fiber.HeaderRetryAfter, "1")
}

// requestHeaderCarrier adapts fasthttp request headers for trace-context injection.
type requestHeaderCarrier struct{ h *fasthttp.RequestHeader }

func (r requestHeaderCarrier) Get(key string) string { return string(r.h.Peek(key)) }
func (r requestHeaderCarrier) Set(key, value string) { r.h.Set(key, value) }
func (r requestHeaderCarrier) Keys() []string {
	var out []string
	for k := range r.h.All() {
		out = append(out, string(k))
	}
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
