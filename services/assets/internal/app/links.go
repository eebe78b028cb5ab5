package app

import (
	"context"
	"strings"
	"time"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// FilesPath is the public path of signed downloads; the gateway serves it without an API
// key and forwards it to this service's /files/{token}.
const FilesPath = "/v0/asset_files/"

// Links are an asset's download URLs (nil when there is nothing to download).
type Links struct {
	Download, Preview *string
}

// Links signs the asset's download URLs, valid for URLTTL from now.
func (s *Service) Links(a domain.Asset) Links {
	if !a.HasBytes() {
		return Links{}
	}
	exp := time.Now().Add(s.URLTTL)
	url := func(f domain.File, variant string) *string {
		tok := s.Signer.Sign(domain.Grant{TenantID: a.TenantID, AssetID: a.ID, FileID: f.ID, Variant: variant, Expires: exp})
		u := strings.TrimRight(s.BaseURL, "/") + FilesPath + tok
		return &u
	}
	l := Links{Download: url(a.File, domain.VariantOriginal)}
	if a.Preview != nil {
		l.Preview = url(*a.Preview, domain.VariantPreview)
	}
	return l
}

// Download is what a valid link grants: one stored file.
type Download struct {
	File    domain.File
	Expires time.Time
}

// Resolve checks a download token and returns the file it grants. A bad or expired
// token gives domain.ErrLinkInvalid or domain.ErrLinkExpired; an asset that is gone (deleted,
// or its file replaced) gives domain.ErrNotFound.
func (s *Service) Resolve(ctx context.Context, token string) (Download, error) {
	c, err := s.Signer.Verify(token, time.Now())
	if err != nil {
		return Download{}, err
	}
	a, err := s.Repo.Get(ctx, c.TenantID, c.AssetID)
	if err != nil {
		return Download{}, err
	}
	if !a.HasBytes() {
		return Download{}, domain.ErrNotFound
	}
	f := a.File
	if c.Variant == domain.VariantPreview {
		if a.Preview == nil {
			return Download{}, domain.ErrNotFound
		}
		f = *a.Preview
	}
	if f.ID != c.FileID {
		return Download{}, domain.ErrNotFound
	}
	return Download{File: f, Expires: c.Expires}, nil
}
