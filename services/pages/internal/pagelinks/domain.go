package pagelinks

import (
	"errors"
	"strings"
	"time"

	"github.com/customerapi/platform/services/pages/internal/domain"
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
	ErrPageNotFound     = domain.ErrPageNotFound // the pages core's errors: one set for the service
	ErrAudienceNotFound = domain.ErrAudienceNotFound
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

// NormalisePath checks the segments of a link path and returns it without a trailing
// slash (except the root, "/"). The document's pattern has already checked what the path
// is made of: a "/" first, then only the characters RFC 3986 allows in a path and
// well-formed percent escapes (so no query or fragment). What a pattern cannot say is
// checked here: no empty, "." or ".." segment, percent-encoded or not.
func NormalisePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") { // the document's pattern refuses it; a guard for other callers
		return "", errors.New("must start with /")
	}
	if strings.HasPrefix(p, "//") {
		return "", errors.New("has an empty, . or .. segment")
	}
	if p == "/" {
		return p, nil
	}
	p = strings.TrimSuffix(p, "/")
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

// TargetError is a target whose fields do not fit its type: a rule across the target's
// fields, which the document states in words.
type TargetError struct {
	Code, Message string
	Field         string // the target's field at fault
}

func (e TargetError) Error() string { return e.Message }

// CheckTarget returns what a target lacks or has too much for its type: an audience
// target names its audienceId (its pageId is optional), a page or page_routing target its
// pageId and no audienceId.
func CheckTarget(targetType string, audienceID, pageID *string) []TargetError {
	var out []TargetError
	switch targetType {
	case TargetAudience:
		if audienceID == nil {
			out = append(out, TargetError{"invalid_type", "Required: an audience target names its audienceId", "audienceId"})
		}
	default:
		if pageID == nil {
			out = append(out, TargetError{"invalid_type", "Required: a " + targetType + " target names its pageId", "pageId"})
		}
		if audienceID != nil {
			out = append(out, TargetError{"unrecognized_keys", "Only an audience target has an audienceId", "audienceId"})
		}
	}
	return out
}
