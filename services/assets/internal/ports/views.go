package ports

import (
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// view renders an asset as the document's shape, generated in api/apitypes (its data
// adds contentType, sizeBytes and sha256 to the spec's type and fileId, see docs/api.md).
func view(a domain.Asset, links app.Links) apitypes.Asset {
	return apitypes.Asset{
		AssetId: a.ID, TenantId: a.TenantID, Name: a.Name, Purpose: a.Purpose, Tags: a.Tags,
		AiDescription: nil, // no model describes assets here (docs/api.md)
		ParentAssetId: a.ParentID, Hidden: a.Hidden,
		Data: apitypes.AssetData{Type: apitypes.AssetType(a.Type), FileId: a.File.ID, ContentType: a.File.ContentType,
			SizeBytes: int(a.File.Size), Sha256: a.File.SHA256},
		LifecycleState: apitypes.AssetLifecycleState(a.State), DownloadUrl: links.Download, PreviewDownloadUrl: links.Preview,
		CreatedAt: timestamp.Format(a.CreatedAt), UpdatedAt: timestamp.Format(a.UpdatedAt),
		TrashedAt: timestamp.FormatPtr(a.TrashedAt), DeletedAt: timestamp.FormatPtr(a.DeletedAt),
	}
}
