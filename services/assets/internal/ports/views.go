package ports

import (
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// dataView describes the stored file (the spec names type and fileId; the rest are our
// additions, see docs/api.md).
type dataView struct {
	Type        string `json:"type"`
	FileID      string `json:"fileId"`
	ContentType string `json:"contentType"`
	SizeBytes   int64  `json:"sizeBytes"`
	SHA256      string `json:"sha256"`
}

type assetView struct {
	AssetID            string   `json:"assetId"`
	TenantID           string   `json:"tenantId"`
	Name               string   `json:"name"`
	Purpose            string   `json:"purpose"`
	Tags               []string `json:"tags"`
	AIDescription      *string  `json:"aiDescription"`
	ParentAssetID      *string  `json:"parentAssetId"`
	Hidden             bool     `json:"hidden"`
	Data               dataView `json:"data"`
	LifecycleState     string   `json:"lifecycleState"`
	DownloadURL        *string  `json:"downloadUrl"`
	PreviewDownloadURL *string  `json:"previewDownloadUrl"`
	CreatedAt          string   `json:"createdAt"`
	UpdatedAt          string   `json:"updatedAt"`
	TrashedAt          *string  `json:"trashedAt"`
	DeletedAt          *string  `json:"deletedAt"`
}

func view(a domain.Asset, links app.Links) assetView {
	return assetView{
		AssetID: a.ID, TenantID: a.TenantID, Name: a.Name, Purpose: a.Purpose, Tags: a.Tags,
		AIDescription: nil, // no model describes assets here (docs/api.md)
		ParentAssetID: a.ParentID, Hidden: a.Hidden,
		Data: dataView{Type: a.Type, FileID: a.File.ID, ContentType: a.File.ContentType, SizeBytes: a.File.Size,
			SHA256: a.File.SHA256},
		LifecycleState: string(a.State), DownloadURL: links.Download, PreviewDownloadURL: links.Preview,
		CreatedAt: timestamp.Format(a.CreatedAt), UpdatedAt: timestamp.Format(a.UpdatedAt),
		TrashedAt: timestamp.FormatPtr(a.TrashedAt), DeletedAt: timestamp.FormatPtr(a.DeletedAt),
	}
}
