package proxy

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/inflight"
	"github.com/customerapi/platform/libs/requestid"
)

// DownloadLimits bound the signed downloads in flight through one gateway replica.
// Downloads need no key, so no key's rate limit applies; these caps keep one link, or one
// client, from holding the assets service's connections and the download pool.
type DownloadLimits struct {
	// PerToken is the most downloads of one link (token) at once (0: no cap).
	PerToken int
	// PerClient is the most downloads from one client address at once, an IPv6 client
	// counted by its /64 (0: no cap).
	PerClient int
}

// Default download caps: a video player or a download manager fetches one file in a few
// parallel ranges, a browser fetches up to six links of one host at once, so a person
// stays well within them; a client address may stand for a few people behind one NAT.
const (
	DefaultDownloadsPerToken  = 8
	DefaultDownloadsPerClient = 32
)

// downloadRetryAfter is the Retry-After of a refused download, in seconds: a slot frees
// when any download of the link or client ends, and a refusal costs the gateway little.
const downloadRetryAfter = "1"

// Downloads counts signed downloads in flight per link and per client address.
type Downloads struct {
	perToken, perClient *inflight.Limiter
	// Refusals, optional, counts the downloads refused by a cap.
	Refusals *observe.Refusals
}

// NewDownloads returns the counters for l.
func NewDownloads(l DownloadLimits) *Downloads {
	return &Downloads{perToken: inflight.New(l.PerToken, 0), perClient: inflight.New(l.PerClient, 0)}
}

// Held reports how many links and client addresses have downloads in flight: the entries
// the counters hold, which return to zero when every download has ended.
func (d *Downloads) Held() (links, clients int) {
	_, links = d.perToken.Held()
	_, clients = d.perClient.Held()
	return links, clients
}

// admit takes a slot for the link and one for the client, or answers 429. The release
// function gives both back, once, however often it is called. Nil Downloads count nothing.
func (d *Downloads) admit(token string, ip net.IP) (release func(), err error) {
	if d == nil {
		return func() {}, nil
	}
	// Fiber's parameters point into the request's buffer, which the next request on the
	// connection reuses; the key must outlive it.
	token = strings.Clone(token)
	client := clientKey(ip)
	releaseClient, err := d.perClient.Acquire(client)
	if err != nil {
		d.Refusals.Inc(observe.DownloadsPerClient)
		return nil, apierror.TooManyAtOnce(fmt.Sprintf("too many downloads from your address at once (at most %d); retry after %s s",
			d.perClient.PerKey(), downloadRetryAfter), downloadRetryAfter)
	}
	releaseToken, err := d.perToken.Acquire(token)
	if err != nil {
		releaseClient()
		d.Refusals.Inc(observe.DownloadsPerLink)
		return nil, apierror.TooManyAtOnce(fmt.Sprintf("too many downloads of this link at once (at most %d); retry after %s s",
			d.perToken.PerKey(), downloadRetryAfter), downloadRetryAfter)
	}
	return func() { releaseToken(); releaseClient() }, nil
}

// clientKey is what a client is counted by: its IPv4 address, or the /64 of its IPv6
// address (one subscriber's usual allocation, which it may spread requests over).
func clientKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// streamDownload sends the prepared request over client and streams the answer to the
// caller, calling release once the answer is over: when its body has been written out
// (or the caller went away and the server closed it), or at once when there is no body
// or no answer. The upstream answer is read into a response of its own, because putting
// a stream into the caller's response closes the one there.
func streamDownload(c *fiber.Ctx, client *fasthttp.HostClient, timeout time.Duration, release func()) error {
	req := c.Request()
	up := fasthttp.AcquireResponse()
	up.StreamBody = true
	closeAfter := req.Header.ConnectionClose()
	req.Header.ResetConnectionClose()
	err := client.DoTimeout(req, up, timeout)
	if closeAfter {
		req.Header.SetConnectionClose()
	}
	if err != nil {
		fasthttp.ReleaseResponse(up)
		release()
		return err
	}
	resp := c.Response()
	up.Header.CopyTo(&resp.Header)
	// The upstream connection's fate is not the client's.
	resp.Header.ResetConnectionClose()
	if len(resp.Header.Peek(requestid.Header)) == 0 { // services echo it; make sure
		requestid.Stamp(c, requestid.Ensure(c))
	}
	body := up.BodyStream()
	if body == nil { // HEAD, 304: headers only
		fasthttp.ReleaseResponse(up)
		release()
		return nil
	}
	resp.SetBodyStream(&releasingBody{r: body, release: func() {
		fasthttp.ReleaseResponse(up) // closes the upstream stream, if it is not yet
		release()
	}}, up.Header.ContentLength())
	return nil
}

// releasingBody passes an upstream body through and runs release when the server closes
// it, after the last byte or on a failed write; closing first closes the upstream stream,
// which frees (or, unfinished, drops) its pooled connection.
type releasingBody struct {
	r       io.Reader
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWithError closes the upstream stream with the error that ended the write, if any,
// then releases.
func (b *releasingBody) CloseWithError(err error) error {
	defer b.release()
	switch s := b.r.(type) {
	case fasthttp.ReadCloserWithError:
		return s.CloseWithError(err)
	case io.Closer:
		return s.Close()
	}
	return nil
}
