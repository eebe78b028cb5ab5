// Package pagelink holds the page links' types and rules: paths on a tenant domain that
// serve a page or an audience.
package pagelink

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

// Target types of a page link.
const (
	TargetAudience    = "audience"
	TargetPage        = "page"
	TargetPageRouting = "page_routing"
)

// Errors of the page links, of a kind (libs/errkind) with their answer's detail (a
// missing target is domain.ErrPageNotFound or domain.ErrAudienceNotFound, as everywhere
// in the service).
var (
	ErrNotFound  = errkind.NotFound.New("page link not found")
	ErrPathTaken = errkind.Conflict.New("this path is already linked on this domain")
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

// Search narrows the links of one domain. Empty fields do not filter.
type Search struct {
	// DomainID is the tenant domain; nil searches the fallback subdomain's links.
	DomainID *string
	// Query matches the path case-insensitively (a substring) or a target identifier
	// (the audience or page ID) exactly.
	Query      string
	TargetType string
	PageID     string
}

// After is a keyset position in path order: the last item's path key and ID.
type After struct{ PathKey, ID string }

// Keys renders a position for a cursor.
func (a After) Keys() []string { return []string{a.PathKey, a.ID} }

// ParseAfter reads a position from cursor keys; nil keys mean the first page.
func ParseAfter(keys []string) (*After, error) {
	if keys == nil {
		return nil, nil
	}
	if len(keys) != 2 || keys[1] == "" {
		return nil, errors.New("malformed position")
	}
	return &After{PathKey: keys[0], ID: keys[1]}, nil
}

// Repository is the storage of page links. It sees the pages and audiences only
// to check a link's target (domain.ErrPageNotFound, domain.ErrAudienceNotFound).
type Repository interface {
	// Create stores a new link after checking its target: a page of the tenant that is
	// not deleted, or an audience of such a page (whose page becomes the link's PageID;
	// a PageID given with an audience must be that page). A path already linked on the
	// domain is ErrPathTaken.
	Create(ctx context.Context, l Link) (Link, error)
	// Get returns a link of the tenant, deleted or not (ErrNotFound).
	Get(ctx context.Context, tenantID, id string) (Link, error)
	// Delete soft-deletes a link, freeing its path; deleting a deleted link changes
	// nothing (ErrNotFound).
	Delete(ctx context.Context, tenantID, id string, now time.Time) error
	// Search returns up to limit live links matching q after the position, in path
	// order, and the number of links matching q.
	Search(ctx context.Context, tenantID string, q Search, after *After, limit int) ([]Link, int64, error)
}
