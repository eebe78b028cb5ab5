// Package app holds the assets use cases: staging uploads in storage, checking their
// media against the asset type, previews, the lifecycle, the purge and the cleanup of
// objects, and resolving signed download links.
package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"strings"
	"time"

	"github.com/gabriel-vasile/mimetype"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/limitio"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Errors of uploads the handlers map to 400s.
var (
	ErrTooLarge = errors.New("the file exceeds the upload limit")
	ErrEmpty    = errors.New("the file is empty")
)

// MediaError says that the file's sniffed media type does not fit the asset type.
type MediaError struct {
	AssetType, MediaType string
}

func (e *MediaError) Error() string {
	return fmt.Sprintf("a %s asset must be one of %s; the file is %s", e.AssetType,
		strings.Join(domain.Accepted(e.AssetType), ", "), e.MediaType)
}

// UndecodableError says that an image's bytes do not decode as the format they start as.
type UndecodableError struct{ MediaType string }

func (e *UndecodableError) Error() string { return "the file is not a valid " + e.MediaType + " image" }

// Service runs the assets use cases.
type Service struct {
	Repo     domain.Repository
	Storage  domain.Storage
	Signer   domain.Signer
	Previews domain.Previewer
	Log      *slog.Logger
	// MaxUploadBytes is the largest file accepted.
	MaxUploadBytes int64
	// UploadGrace is how long an upload may take before the janitor may remove its
	// objects (longer than any upload can last).
	UploadGrace time.Duration
	// URLTTL is how long download links stay valid.
	URLTTL time.Duration
	// BaseURL is the public API address download links start with.
	BaseURL string
	// Clock tells the time (the system clock when nil).
	Clock timestamp.Clock
}

// sniffLen is how much of a file's start the media type is detected from.
const sniffLen = 3072

// Staged is a file written to storage that no asset holds yet. Create turns it into an
// asset; Discard removes it. Until one of them runs, the object is tracked for cleanup.
type Staged struct {
	TenantID string
	File     domain.File
	// Declared is the part's own Content-Type, used only to tell text formats apart.
	Declared string
}

// Stage streams r into storage while counting, hashing and sniffing it; no more than a
// small buffer of it is ever in memory. Past MaxUploadBytes it fails with ErrTooLarge,
// and on any failure nothing is left in storage.
func (s *Service) Stage(ctx context.Context, tenantID string, r io.Reader, declared string) (*Staged, error) {
	fileID := ids.New("file")
	key := objectKey(tenantID, fileID)
	if err := s.Repo.Reserve(ctx, tenantID, []string{key}, s.Clock.Now().Add(s.UploadGrace)); err != nil {
		return nil, err
	}
	head, err := readHead(r, sniffLen)
	if err != nil {
		s.release(ctx, key)
		return nil, fmt.Errorf("read upload: %w", err)
	}
	n := len(head)
	if n == 0 {
		s.release(ctx, key)
		return nil, ErrEmpty
	}
	media := mimetype.Detect(head).String()
	h := sha256.New()
	lr := limitio.NewReader(io.MultiReader(bytes.NewReader(head), r), s.MaxUploadBytes, ErrTooLarge)
	size, err := s.Storage.Put(ctx, key, io.TeeReader(lr, h), media)
	if err != nil {
		s.release(ctx, key)
		if lr.Over() {
			return nil, ErrTooLarge
		}
		return nil, fmt.Errorf("store upload: %w", err)
	}
	return &Staged{TenantID: tenantID, Declared: declared, File: domain.File{ID: fileID, Key: key,
		ContentType: media, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}}, nil
}

// readHead reads up to n bytes; a short read is fine at io.EOF only (io.ReadFull would
// also take a reader's own io.ErrUnexpectedEOF, a truncated upload, for the end).
func readHead(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		m, err := r.Read(buf[got:])
		got += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return buf[:got], nil
}

// Discard removes a staged file that will not become an asset.
func (s *Service) Discard(ctx context.Context, st *Staged) {
	if st != nil {
		s.release(ctx, st.File.Key)
	}
}

// release removes objects and their cleanup records; if removal fails the records stay
// (due at once) and the janitor retries.
func (s *Service) release(ctx context.Context, keys ...string) {
	// Cleanup runs even when the request that caused it was cancelled.
	ctx = context.WithoutCancel(ctx)
	gone, failed := s.remove(ctx, slog.LevelWarn, "object removal failed; the janitor retries", keys)
	if len(failed) > 0 {
		if err := s.Repo.DueAt(ctx, failed, s.Clock.Now()); err != nil {
			s.Log.WarnContext(ctx, "scheduling object cleanup failed", slog.Any("error", err))
		}
	}
	if len(gone) > 0 {
		if err := s.Repo.Forget(ctx, gone); err != nil {
			s.Log.WarnContext(ctx, "dropping cleanup records failed; the janitor drops them", slog.Any("error", err))
		}
	}
}

// remove deletes the objects of keys, logging each failure at level, and returns the
// keys whose objects are gone and those whose removal failed.
func (s *Service) remove(ctx context.Context, level slog.Level, msg string, keys []string) (gone, failed []string) {
	for _, k := range keys {
		if err := s.Storage.Delete(ctx, k); err != nil {
			s.Log.Log(ctx, level, msg, slog.String("key", k), slog.Any("error", err))
			failed = append(failed, k)
			continue
		}
		gone = append(gone, k)
	}
	return gone, failed
}

func objectKey(tenantID, fileID string) string { return "t/" + tenantID + "/" + fileID }

// NewAsset is the input of Create besides the staged file.
type NewAsset struct {
	Name     string
	Purpose  string
	Tags     []string
	Type     string
	ParentID *string
	Hidden   bool
}

// textRefinements are declared types that refine a sniffed text/plain (a sniffer cannot
// tell JavaScript or CSS from plain text), for custom components only.
var textRefinements = map[string]string{
	"text/javascript": "text/javascript", "application/javascript": "text/javascript",
	"application/x-javascript": "text/javascript", "text/css": "text/css",
}

// mediaType strips parameters from a content type.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// Create checks the staged file against the asset type, makes its preview, and stores
// the asset. On any failure the staged objects are removed; nothing half-made remains.
func (s *Service) Create(ctx context.Context, in NewAsset, st *Staged) (_ domain.Asset, err error) {
	keys := []string{st.File.Key}
	defer func() {
		if err != nil {
			s.release(ctx, keys...)
		}
	}()
	file := st.File
	media := mediaType(file.ContentType)
	if in.Type == domain.TypeCustomComponent && media == "text/plain" {
		if refined, ok := textRefinements[mediaType(st.Declared)]; ok {
			media, file.ContentType = refined, refined+"; charset=utf-8"
		}
	}
	if !domain.Accepts(in.Type, media) {
		return domain.Asset{}, &MediaError{AssetType: in.Type, MediaType: media}
	}
	var prev *domain.File
	if s.Previews.Supports(media) {
		prev, err = s.makePreview(ctx, st.TenantID, file, media, &keys)
		if err != nil {
			return domain.Asset{}, err
		}
	}
	now := s.Clock.Now()
	a := domain.Asset{ID: ids.New("asset"), TenantID: st.TenantID, Name: in.Name, Purpose: in.Purpose, Tags: in.Tags,
		Type: in.Type, ParentID: in.ParentID, Hidden: in.Hidden, File: file, Preview: prev, State: domain.Active,
		CreatedAt: now, UpdatedAt: now}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if err := s.Repo.Create(ctx, a, keys, domain.Announce(domain.EventCreated, a, "")); err != nil {
		return domain.Asset{}, err
	}
	return a, nil
}

// makePreview renders the preview of an image file from storage and stores it,
// appending its key to keys; nil when the image is too large to preview.
func (s *Service) makePreview(ctx context.Context, tenantID string, file domain.File, media string, keys *[]string) (*domain.File, error) {
	img, err := s.Previews.Make(ctx, media, func() (io.ReadCloser, error) {
		return s.Storage.Open(ctx, file.Key, 0, -1)
	})
	if errors.Is(err, domain.ErrUndecodable) {
		return nil, &UndecodableError{MediaType: media}
	}
	if err != nil || img == nil {
		return nil, err
	}
	id := ids.New("file")
	key := objectKey(tenantID, id)
	if err := s.Repo.Reserve(ctx, tenantID, []string{key}, s.Clock.Now().Add(s.UploadGrace)); err != nil {
		return nil, err
	}
	*keys = append(*keys, key)
	if _, err := s.Storage.Put(ctx, key, bytes.NewReader(img.Data), img.ContentType); err != nil {
		return nil, fmt.Errorf("store preview: %w", err)
	}
	sum := sha256.Sum256(img.Data)
	return &domain.File{ID: id, Key: key, ContentType: img.ContentType, Size: int64(len(img.Data)),
		SHA256: hex.EncodeToString(sum[:])}, nil
}

// Get returns an asset in any state.
func (s *Service) Get(ctx context.Context, tenantID, id string) (domain.Asset, error) {
	return s.Repo.Get(ctx, tenantID, id)
}

// List returns a page of the tenant's assets in state, newest first.
func (s *Service) List(ctx context.Context, tenantID string, state domain.State, f domain.Filter, after string, limit int) ([]domain.Asset, int64, error) {
	return s.Repo.List(ctx, tenantID, state, f, after, limit)
}

// Trash moves an active asset to the trash.
func (s *Service) Trash(ctx context.Context, tenantID, id string) (domain.Asset, error) {
	now := s.Clock.Now()
	return s.Repo.Update(ctx, tenantID, id, func(a *domain.Asset) (domain.Event, bool, error) {
		if err := a.Trash(now); err != nil {
			return domain.Event{}, false, err
		}
		return domain.Announce(domain.EventTrashed, *a, ""), true, nil
	})
}

// Restore brings a trashed asset back.
func (s *Service) Restore(ctx context.Context, tenantID, id string) (domain.Asset, error) {
	now := s.Clock.Now()
	return s.Repo.Update(ctx, tenantID, id, func(a *domain.Asset) (domain.Event, bool, error) {
		if err := a.Restore(now); err != nil {
			return domain.Event{}, false, err
		}
		return domain.Announce(domain.EventRestored, *a, ""), true, nil
	})
}

// Delete marks an asset deleted and removes its bytes. The record stays; deleting it
// again changes nothing.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	now := s.Clock.Now()
	var remove []string
	_, err := s.Repo.Update(ctx, tenantID, id, func(a *domain.Asset) (domain.Event, bool, error) {
		remove = a.Delete(now)
		return domain.Announce(domain.EventDeleted, *a, domain.ReasonRequest), remove != nil, nil
	})
	if err != nil {
		return err
	}
	s.release(ctx, remove...)
	return nil
}
