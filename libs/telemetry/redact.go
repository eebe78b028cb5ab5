package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
)

// credentialParams are the words that make a route parameter a credential (a signed
// download's token, a key, a signature): its value must not reach a log or a span.
var credentialParams = [...]string{"token", "secret", "password", "signature", "sig", "key", "credential"}

// IsCredentialParam reports whether a route parameter's name says it holds a credential:
// "token", "apiKey", "download_signature", but not "key_id" or "asset_id".
func IsCredentialParam(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "id") { // names what the credential belongs to, not the credential
		return false
	}
	for _, w := range credentialParams {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactCredential stands for a credential in logs and spans: its first four characters
// (when it is long enough to keep them secret) and the start of its SHA-256, which an
// operator holding the credential can compute to find its requests.
func RedactCredential(v string) string {
	sum := sha256.Sum256([]byte(v))
	prefix := ""
	if len(v) >= 16 {
		prefix = v[:4]
	}
	return prefix + "…redacted-sha256:" + hex.EncodeToString(sum[:6])
}

// RedactPath returns path with every segment that route names as a credential replaced by
// its redaction. route is a Fiber pattern (/files/:token) or a document template
// (/v0/asset_files/{token}); a path that does not follow it is returned as it is.
func RedactPath(path, route string) string {
	if !namesCredential(route) {
		return path // the common case, without allocating
	}
	rsegs := strings.Split(route, "/")
	psegs := strings.Split(path, "/")
	if len(rsegs) != len(psegs) {
		return path
	}
	changed := false
	for i, r := range rsegs {
		name, ok := paramName(r)
		if ok && psegs[i] != "" && IsCredentialParam(name) {
			psegs[i] = RedactCredential(psegs[i])
			changed = true
		}
	}
	if !changed {
		return path
	}
	return strings.Join(psegs, "/")
}

// namesCredential reports whether a segment of route is a credential parameter.
func namesCredential(route string) bool {
	for rest := route; rest != ""; {
		var seg string
		seg, rest, _ = strings.Cut(rest, "/")
		if name, ok := paramName(seg); ok && IsCredentialParam(name) {
			return true
		}
	}
	return false
}

// paramName is the name of a route segment that is a parameter (":name", ":name?",
// "{name}").
func paramName(seg string) (string, bool) {
	switch {
	case strings.HasPrefix(seg, ":"):
		return strings.TrimSuffix(seg[1:], "?"), true
	case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

// routeCredentials remembers, per route pattern, whether the route names a credential
// segment, so that a request pays one lookup, not a walk of its route: the patterns are
// the router's (and "unmatched"), a bounded set.
type routeCredentials struct{ names sync.Map } // route → bool

// redact is RedactPath, with the route's verdict remembered.
func (rc *routeCredentials) redact(path, route string) string {
	v, ok := rc.names.Load(route)
	if !ok {
		v, _ = rc.names.LoadOrStore(strings.Clone(route), namesCredential(route))
	}
	if !v.(bool) {
		return path
	}
	return RedactPath(path, route)
}
