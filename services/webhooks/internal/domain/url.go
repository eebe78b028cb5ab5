package domain

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// URLProblem says why raw is not an acceptable subscription URL, or "" when it is. It
// asks more than a parse: only URI characters (RFC 3986; percent-encode others), http or
// https, a port from 1 to 65535, and a host that is an IP address or a well-formed DNS
// name whose last label is not a number (a name like 0x7f.1 is an IPv4 address to some
// resolvers).
func URLProblem(raw string) string {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"<>\^`+"`{|}", c) >= 0 {
			return "the URL may contain only URI characters; percent-encode the others"
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "expected an absolute http or https URL"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "the port must be from 1 to 65535"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "the port must be from 1 to 65535"
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if strings.HasPrefix(u.Host, "[") {
		return "the host is not a valid IPv6 address"
	}
	return hostProblem(strings.TrimSuffix(host, "."))
}

func hostProblem(host string) string {
	if host == "" || len(host) > 253 {
		return "the host must be a DNS name of 1 to 253 characters or an IP address"
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "the host is not a well-formed DNS name"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "the host is not a well-formed DNS name"
			}
		}
	}
	last := strings.ToLower(labels[len(labels)-1])
	if isNumber(last) || strings.HasPrefix(last, "0x") && isHex(last[2:]) {
		return "the host looks like an IP address but is not one"
	}
	return ""
}

func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RefusedError reports a target address the policy refuses. Its message, which tenants
// read, names neither the address nor its kind: a name's refusal would otherwise tell a
// tenant what the cluster's internal names resolve to. Detail, for the operator's log,
// names both.
type RefusedError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

// RefusedMessage is what a tenant reads of every refusal.
const RefusedMessage = "refused: the destination is not allowed: it is, or resolves to, a private, loopback or otherwise non-public address"

// Error implements error.
func (e *RefusedError) Error() string { return RefusedMessage }

// Detail says which address was refused and why, for the operator's log only.
func (e *RefusedError) Detail() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("refused: cannot check the address %q", e.Host)
	}
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("refused: %s resolves to %s, a %s address", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("refused: %s is a %s address", e.Addr, e.Reason)
}
