package domain

import (
	"context"
	"errors"
	"io"
	"time"
)

// The outside systems the use cases work with, in the domain's terms: object storage,
// the signing of download links, and the making of image previews.

// Errors of the outside systems.
var (
	// ErrObjectNotFound is Storage.Open's error for a key that holds no object.
	ErrObjectNotFound = errors.New("storage: object not found")
	// ErrLinkInvalid and ErrLinkExpired are Signer.Verify's (403 both; the detail differs).
	ErrLinkInvalid = errors.New("the download link is invalid")
	ErrLinkExpired = errors.New("the download link has expired")
	// ErrUndecodable means an image's bytes do not decode as the format they claim to be.
	ErrUndecodable = errors.New("preview: the image cannot be decoded")
)

// Storage holds objects by key.
type Storage interface {
	// Put stores the bytes read from r under key and returns how many there were. The
	// object appears whole or not at all: when r fails (a client that went away, a size
	// limit) or ctx ends, nothing is left under key.
	Put(ctx context.Context, key string, r io.Reader, contentType string) (int64, error)
	// Open reads length bytes of the object from offset (length < 0: to the end).
	// A missing object is ErrObjectNotFound.
	Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Delete removes the object; removing a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// Check reports whether the storage can be used (readiness).
	Check(ctx context.Context) error
}

// Variants of a download.
const (
	VariantOriginal = "original"
	VariantPreview  = "preview"
)

// Grant is what a download link grants: one variant of one stored file, until Expires.
type Grant struct {
	TenantID, AssetID, FileID, Variant string
	Expires                            time.Time
}

// Signer makes and checks the tokens of download links.
type Signer interface {
	// Sign returns the token for g (Expires is rounded down to the second).
	Sign(g Grant) string
	// Verify checks a token's signature, then its expiry at now: ErrLinkInvalid or
	// ErrLinkExpired.
	Verify(token string, now time.Time) (Grant, error)
}

// Image is a made preview.
type Image struct {
	Data          []byte
	ContentType   string
	Width, Height int
}

// Previewer makes bounded-size previews of images.
type Previewer interface {
	// Supports reports whether images of mediaType get a preview.
	Supports(mediaType string) bool
	// Make returns the preview of the image of mediaType that open reads, or nil when the
	// image is too large to preview; bytes that do not decode give ErrUndecodable.
	Make(ctx context.Context, mediaType string, open func() (io.ReadCloser, error)) (*Image, error)
}
