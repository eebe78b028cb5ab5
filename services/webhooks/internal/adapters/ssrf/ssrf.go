// Package ssrf keeps deliveries away from addresses a receiver's URL must not reach:
// loopback, private, link-local, cloud metadata and other non-public addresses. It checks
// a URL when a subscription is written and every connection when it is dialed: the
// dialer resolves the name itself, refuses the answer if any address is forbidden, and a
// net.Dialer Control function checks the socket's address once more, so a name that
// resolves to a public address at subscription time and to a private one later (DNS
// rebinding) still cannot get through.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Resolver looks up the addresses of a host name; *net.Resolver is one. Tests give a
// fixed table so they need no DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy decides which addresses may be reached.
type Policy struct {
	// AllowPrivate allows loopback, private, link-local and other non-public addresses
	// (local development). Cloud metadata, unspecified and multicast addresses stay
	// refused: nothing legitimate receives webhooks there.
	AllowPrivate bool
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

var (
	// Cloud metadata endpoints: AWS/GCP/Azure/OpenStack, AWS ECS task metadata, Alibaba,
	// AWS over IPv6.
	metadata = prefixes("169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32", "fd00:ec2::254/128")
	// Special-purpose ranges that are not publicly routable (RFC 6890 and successors)
	// beyond what netip classifies: "this network", shared address space (CGNAT), IETF
	// protocol assignments, documentation, benchmarking, reserved, discard-only, ORCHIDs,
	// Teredo (embeds an obfuscated IPv4 address).
	nonPublic = prefixes("0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "::/96", "100::/64", "2001::/32", "2001:db8::/32",
		"2001:10::/28", "2001:20::/28")
	// IPv6 ranges that embed an IPv4 address: NAT64 and 6to4. The embedded address decides.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// classify returns why addr is special ("" for a public unicast address) and whether it
// stays refused even when private targets are allowed.
func classify(addr netip.Addr) (reason string, always bool) {
	addr = addr.WithZone("").Unmap()
	if addr.Is6() {
		b := addr.As16()
		switch {
		case nat64.Contains(addr):
			return classify(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(addr):
			return classify(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	for _, p := range metadata {
		if p.Contains(addr) {
			return "cloud metadata", true
		}
	}
	switch {
	case !addr.IsValid():
		return "invalid", true
	case addr.IsUnspecified():
		return "unspecified", true
	case addr.IsMulticast() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "multicast or broadcast", true
	case addr.IsLoopback():
		return "loopback", false
	case addr.IsPrivate():
		return "private", false
	case addr.IsLinkLocalUnicast():
		return "link-local", false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return "non-public", false
		}
	}
	return "", false
}

// Check returns a *domain.RefusedError when addr may not be reached, else nil.
func (p Policy) Check(addr netip.Addr) error {
	reason, always := classify(addr)
	if reason == "" || (p.AllowPrivate && !always) {
		return nil
	}
	return &domain.RefusedError{Addr: addr.WithZone("").Unmap(), Reason: reason}
}

// Guard resolves and dials delivery targets under a policy.
type Guard struct {
	policy   Policy
	resolver Resolver
	dialer   net.Dialer
}

// NewGuard returns a Guard; a nil resolver uses the system's (net.DefaultResolver).
func NewGuard(p Policy, r Resolver, dialTimeout time.Duration) *Guard {
	if r == nil {
		r = net.DefaultResolver
	}
	g := &Guard{policy: p, resolver: r}
	g.dialer = net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: g.control}
	return g
}

// control runs on every socket before it connects, with the address actually dialed.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &domain.RefusedError{Host: address, Reason: "uncheckable"}
	}
	return g.policy.Check(ap.Addr())
}

// lookup resolves host (an IP literal resolves to itself) and refuses the whole answer if
// any address is forbidden, as a subscription check would.
func (g *Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := g.policy.Check(a); err != nil {
			return nil, err
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &LookupError{Host: host, Err: err}
	}
	if len(addrs) == 0 {
		return nil, &LookupError{Host: host, Err: errors.New("no addresses")}
	}
	for _, a := range addrs {
		if err := g.policy.Check(a); err != nil {
			var refused *domain.RefusedError
			if errors.As(err, &refused) {
				refused.Host = host
			}
			return nil, err
		}
	}
	return addrs, nil
}

// LookupError reports a host name that did not resolve.
type LookupError struct {
	Host string
	Err  error
}

// Error implements error. It leaves out the resolver's own message, which names the
// resolver's address (Go's "lookup x on 10.96.0.10:53"), for the tenant reads it.
func (e *LookupError) Error() string {
	var dns *net.DNSError
	switch {
	case errors.As(e.Err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("resolve %s: no such host", e.Host)
	case errors.As(e.Err, &dns) && dns.IsTimeout:
		return fmt.Sprintf("resolve %s: timed out", e.Host)
	case errors.As(e.Err, &dns):
		return fmt.Sprintf("resolve %s: lookup failed", e.Host)
	}
	return fmt.Sprintf("resolve %s: %v", e.Host, e.Err)
}

// Unwrap returns the resolver's error.
func (e *LookupError) Unwrap() error { return e.Err }

// DialContext connects to address (host:port) if every address of the host is allowed,
// trying them in turn. It is the delivery transport's dial function.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var first error
	for _, a := range addrs {
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// CheckURL checks the host of a subscription URL. It returns a *domain.RefusedError when the
// host is, or resolves to, a forbidden address, and a *LookupError when the name does
// not resolve (which the caller may accept: the dialer checks again on every delivery).
func (g *Guard) CheckURL(ctx context.Context, u *url.URL) error {
	_, err := g.lookup(ctx, u.Hostname())
	return err
}
