package pagelinks

import (
	"errors"
	"strings"
	"time"
)

// Target types of a page link.
const (
	TargetAudience    = "audience"
	TargetPage        = "page"
	TargetPageRouting = "page_routing"
)

// Errors the use cases report; the HTTP layer maps them.
var (
	ErrNotFound         = errors.New("page link not found")
	ErrPageNotFound     = errors.New("page not found")
	ErrAudienceNotFound = errors.New("audience not found")
	ErrPathTaken        = errors.New("path already linked on this domain")
)

// Link maps a path on a tenant domain to a target.
type Link struct {
	TenantID string
	ID       string
	// DomainID is the tenant domain; nil means the tenant's fallback subdomain.
	DomainID *string
	Path     string
	// PathKey is the path compared for uniqueness and search: normalised, lower case.
	PathKey    string
	TargetType string
	// PageID is the page served: the target page, or the audience's page.
	PageID string
	// AudienceID is set exactly for audience targets.
	AudienceID *string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DeletedAt  *time.Time
}

// MaxPathLen bounds a link's path.
const MaxPathLen = 1024

// NormalisePath checks a link path and returns it without a trailing slash (except the
// root, "/"). A path starts with "/", has no query, fragment, empty, "." or ".."
// segment, and only the characters RFC 3986 allows in a path (percent escapes included).
func NormalisePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", errors.New("must start with /")
	}
	if len(p) > MaxPathLen {
		return "", errors.New("must be at most 1024 characters")
	}
	if strings.HasPrefix(p, "//") {
		return "", errors.New("has an empty, . or .. segment")
	}
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "", errors.New("has a malformed percent escape")
			}
		default:
			return "", errors.New("has a character not allowed in a URL path (query strings, fragments, spaces and non-ASCII must be left out or percent-encoded)")
		}
	}
	if p == "/" {
		return p, nil
	}
	for _, seg := range strings.Split(p[1:], "/") {
		// A percent-encoded dot segment (%2e, .%2E) is the same segment to browsers and
		// servers that decode before resolving, so it is refused too.
		if d := strings.ReplaceAll(strings.ToLower(seg), "%2e", "."); d == "" || d == "." || d == ".." {
			return "", errors.New("has an empty, . or .. segment (percent-encoded or not)")
		}
	}
	return p, nil
}

// PathKey is the form of a normalised path that uniqueness and search compare.
func PathKey(p string) string { return strings.ToLower(p) }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
