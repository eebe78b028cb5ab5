// Package domain holds the assets context's types and rules: asset types and the media
// each accepts, the lifecycle, and the uniqueness of tags. The bounds and shapes of the
// fields are the OpenAPI document's (AssetUpload). Plain Go.
package domain

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

// State is an asset's lifecycleState.
type State string

// Lifecycle states: active → trashed → active again, or deleted (from either).
const (
	Active  State = "active"
	Trashed State = "trashed"
	Deleted State = "deleted"
)

// Asset types (the spec's assetType filter values).
const (
	TypeImage           = "image"
	TypeLogo            = "logo"
	TypeIcon            = "icon"
	TypeVideo           = "video"
	TypeCustomComponent = "custom-component"
)

// accepted lists the media types each asset type accepts, as sniffed from the bytes.
var accepted = map[string][]string{
	TypeImage: {"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/avif", "image/svg+xml"},
	TypeLogo:  {"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"},
	TypeIcon:  {"image/png", "image/x-icon", "image/gif", "image/webp", "image/svg+xml"},
	TypeVideo: {"video/mp4", "video/webm", "video/quicktime"},
	TypeCustomComponent: {"text/html", "text/javascript", "text/css", "application/json", "application/zip",
		"text/plain"},
}

// Accepted returns the media types an asset type accepts.
func Accepted(assetType string) []string { return accepted[assetType] }

// Accepts reports whether an asset of assetType may hold bytes of mediaType (without
// parameters).
func Accepts(assetType, mediaType string) bool {
	return slices.Contains(accepted[assetType], mediaType)
}

// Errors of assets; those with a kind (libs/errkind) carry the answer's detail.
var (
	ErrNotFound      = errkind.NotFound.New("asset not found")
	ErrNotActive     = errkind.Conflict.New("only an active asset can be moved to the trash")
	ErrNotTrashed    = errkind.Conflict.New("only an asset in the trash can be restored")
	ErrParentMissing = errkind.Invalid.At("no asset with this ID exists (or it was deleted)", "parentAssetId")
	ErrUploadExpired = errors.New("upload took longer than the cleanup grace period")
)

// File is one stored object: the original bytes or the preview.
type File struct {
	ID          string
	Key         string
	ContentType string
	Size        int64
	SHA256      string // lower-case hex
}

// Asset is a stored media item with its lifecycle.
type Asset struct {
	ID        string
	TenantID  string
	Name      string
	Purpose   string
	Tags      []string
	Type      string
	ParentID  *string
	Hidden    bool
	File      File
	Preview   *File
	State     State
	CreatedAt time.Time
	UpdatedAt time.Time
	TrashedAt *time.Time
	DeletedAt *time.Time
}

// Trash moves an active asset to the trash.
func (a *Asset) Trash(now time.Time) error {
	if a.State != Active {
		return ErrNotActive
	}
	a.State, a.TrashedAt, a.UpdatedAt = Trashed, &now, now
	return nil
}

// Restore brings a trashed asset back.
func (a *Asset) Restore(now time.Time) error {
	if a.State != Trashed {
		return ErrNotTrashed
	}
	a.State, a.TrashedAt, a.UpdatedAt = Active, nil, now
	return nil
}

// Delete marks the asset deleted and returns the keys of the objects to remove. Deleting
// a deleted asset changes nothing and returns no keys.
func (a *Asset) Delete(now time.Time) []string {
	if a.State == Deleted {
		return nil
	}
	a.State, a.DeletedAt, a.UpdatedAt = Deleted, &now, now
	return a.Objects()
}

// Objects returns the keys of the asset's stored objects: its file and its preview.
func (a *Asset) Objects() []string {
	if a.Preview == nil {
		return []string{a.File.Key}
	}
	return []string{a.File.Key, a.Preview.Key}
}

// HasBytes reports whether the asset's objects exist (everything but deleted assets).
func (a *Asset) HasBytes() bool { return a.State != Deleted }

// DuplicateTag returns the index of the first tag equal (ignoring case) to an earlier
// one, or -1. Tags are matched case-insensitively, so two that differ only in case are
// the same tag. Empty tags are skipped: they are no tags (the document refuses them).
func DuplicateTag(tags []string) int {
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		k := strings.ToLower(t)
		if k == "" {
			continue
		}
		if seen[k] {
			return i
		}
		seen[k] = true
	}
	return -1
}
