package ssrf

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// table is a resolver that answers from a map, so tests need no DNS.
type table map[string][]string

func (t table) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ss, ok := t[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out, nil
}

func TestPolicyCheck(t *testing.T) {
	strict, lax := Policy{}, Policy{AllowPrivate: true}
	for _, tc := range []struct {
		addr          string
		strict, lax   bool // allowed?
		reasonContain string
	}{
		{"93.184.216.34", true, true, ""},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true, ""},
		{"127.0.0.1", false, true, "loopback"},
		{"127.255.0.9", false, true, "loopback"},
		{"::1", false, true, "loopback"},
		{"10.0.0.1", false, true, "private"},
		{"10.255.255.254", false, true, "private"},
		{"172.16.5.4", false, true, "private"},
		{"192.168.1.1", false, true, "private"},
		{"fd12:3456::1", false, true, "private"},
		{"169.254.1.1", false, true, "link-local"},
		{"fe80::1", false, true, "link-local"},
		{"169.254.169.254", false, false, "cloud metadata"},
		{"fd00:ec2::254", false, false, "cloud metadata"},
		{"100.100.100.200", false, false, "cloud metadata"},
		{"::ffff:169.254.169.254", false, false, "cloud metadata"},
		{"::ffff:127.0.0.1", false, true, "loopback"},
		{"::ffff:10.1.1.1", false, true, "private"},
		{"64:ff9b::a00:1", false, true, "private"},  // NAT64 of 10.0.0.1
		{"64:ff9b::5db8:d822", true, true, ""},      // NAT64 of 93.184.216.34
		{"2002:7f00:1::1", false, true, "loopback"}, // 6to4 of 127.0.0.1
		{"100.64.0.1", false, true, "non-public"},   // CGNAT
		{"192.0.2.10", false, true, "non-public"},   // documentation
		{"0.0.0.0", false, false, "unspecified"},
		{"::", false, false, "unspecified"},
		{"224.0.0.1", false, false, "multicast"},
		{"255.255.255.255", false, false, "broadcast"},
	} {
		a := netip.MustParseAddr(tc.addr)
		err := strict.Check(a)
		if (err == nil) != tc.strict {
			t.Errorf("strict %s: %v", tc.addr, err)
		}
		if err != nil {
			var re *domain.RefusedError
			if !errors.As(err, &re) || !strings.Contains(re.Reason, tc.reasonContain) {
				t.Errorf("strict %s: reason %v, want %q", tc.addr, err, tc.reasonContain)
			}
		}
		if err := lax.Check(a); (err == nil) != tc.lax {
			t.Errorf("allow-private %s: %v", tc.addr, err)
		}
	}
}

var names = table{
	"public.test":   {"93.184.216.34"},
	"loopback.test": {"127.0.0.1"},
	"internal.test": {"10.20.30.40"},
	"metadata.test": {"169.254.169.254"},
	"mixed.test":    {"93.184.216.34", "10.0.0.1"},
}

// The URL check refuses 127.0.0.1, 10.0.0.0/8, 169.254.169.254 and names resolving to
// them; a name that does not resolve is reported as such.
func TestCheckURL(t *testing.T) {
	g := NewGuard(Policy{}, names, time.Second)
	for raw, refused := range map[string]bool{
		"https://public.test/hook":          false,
		"https://93.184.216.34/hook":        false,
		"http://127.0.0.1:8080/hook":        true,
		"http://[::1]/hook":                 true,
		"http://10.0.0.1/hook":              true,
		"http://10.200.3.4/hook":            true,
		"http://169.254.169.254/latest":     true,
		"http://[::ffff:169.254.169.254]/x": true,
		"https://loopback.test/hook":        true,
		"https://internal.test/hook":        true,
		"https://metadata.test/hook":        true,
		"https://mixed.test/hook":           true,
	} {
		u, _ := url.Parse(raw)
		err := g.CheckURL(context.Background(), u)
		var re *domain.RefusedError
		if got := errors.As(err, &re); got != refused {
			t.Errorf("%s: err %v, refused %v want %v", raw, err, got, refused)
		}
	}
	u, _ := url.Parse("https://nowhere.test/hook")
	var le *LookupError
	if err := g.CheckURL(context.Background(), u); !errors.As(err, &le) {
		t.Errorf("unresolvable host: %v", err)
	}
	lax := NewGuard(Policy{AllowPrivate: true}, names, time.Second)
	for _, raw := range []string{"http://127.0.0.1:8080/", "https://internal.test/"} {
		u, _ := url.Parse(raw)
		if err := lax.CheckURL(context.Background(), u); err != nil {
			t.Errorf("allow-private %s: %v", raw, err)
		}
	}
	u, _ = url.Parse("http://169.254.169.254/")
	if err := lax.CheckURL(context.Background(), u); err == nil {
		t.Error("allow-private still refuses cloud metadata")
	}
}

// listen starts a TCP listener on 127.0.0.1 that accepts and closes connections.
func listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestDialRefusesForbiddenTargets(t *testing.T) {
	addr := listen(t)
	_, port, _ := net.SplitHostPort(addr)
	rebind := table{"rebind.test": {"127.0.0.1"}}
	g := NewGuard(Policy{}, rebind, time.Second)
	for _, target := range []string{addr, "rebind.test:" + port, "10.0.0.1:80", "169.254.169.254:80", "[::1]:" + port} {
		conn, err := g.DialContext(context.Background(), "tcp", target)
		var re *domain.RefusedError
		if !errors.As(err, &re) {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("dial %s: %v, want refused", target, err)
		}
	}
	// The dialer's Control function checks the socket address itself, whatever the name
	// resolution said: a dial that bypasses the lookup is refused as well.
	if _, err := g.dialer.DialContext(context.Background(), "tcp", addr); !errors.As(err, new(*domain.RefusedError)) {
		t.Fatalf("control: %v, want refused", err)
	}
	lax := NewGuard(Policy{AllowPrivate: true}, rebind, time.Second)
	for _, target := range []string{addr, "rebind.test:" + port} {
		conn, err := lax.DialContext(context.Background(), "tcp", target)
		if err != nil {
			t.Fatalf("allow-private dial %s: %v", target, err)
		}
		conn.Close()
	}
}

// The refusal a tenant reads (the subscription's 400, an attempt's error) never says
// which address a name resolves to, nor the resolver's address: it would map the
// cluster's internal names. Detail keeps them for the operator's log.
func TestRefusalNamesNoAddress(t *testing.T) {
	addr := listen(t)
	_, port, _ := net.SplitHostPort(addr)
	names := table{"internal.test": {"10.1.2.3"}, "rebind.test": {"127.0.0.1"}, "meta.test": {"169.254.169.254"}}
	g := NewGuard(Policy{}, names, time.Second)
	var errs []error
	for _, raw := range []string{"https://internal.test/hook", "https://meta.test/hook", "http://10.9.8.7/hook"} {
		u, _ := url.Parse(raw)
		errs = append(errs, g.CheckURL(context.Background(), u))
	}
	_, err := g.DialContext(context.Background(), "tcp", "rebind.test:"+port)
	errs = append(errs, err)
	_, err = g.dialer.DialContext(context.Background(), "tcp", addr) // the Control function's refusal
	errs = append(errs, err)
	for _, err := range errs {
		var re *domain.RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("%v: want a refusal", err)
		}
		msg := re.Error() // what the attempt records (a dial wraps it with the address it dialed)
		for _, leak := range []string{"10.1.2.3", "127.0.0.1", "169.254.169.254", "10.9.8.7", "loopback address", "private address"} {
			if strings.Contains(msg, leak) {
				t.Errorf("refusal %q names %q: a tenant must not learn what an address or name resolves to", msg, leak)
			}
		}
		if !strings.Contains(msg, "not allowed") || !strings.Contains(msg, "non-public") {
			t.Errorf("refusal %q does not say the destination is not allowed", msg)
		}
		if re.Addr.String() == "" || !strings.Contains(re.Detail(), re.Addr.String()) {
			t.Errorf("Detail %q drops the address the operator's log needs", re.Detail())
		}
	}
	// An unresolvable name: the resolver's own address (Go's DNSError says "on 10.96.0.10:53") stays out.
	resolverErr := &LookupError{Host: "x.test", Err: &net.DNSError{Err: "no such host", Name: "x.test", Server: "10.96.0.10:53", IsNotFound: true}}
	if strings.Contains(resolverErr.Error(), "10.96.0.10") {
		t.Errorf("lookup error %q names the cluster's resolver", resolverErr.Error())
	}
}
