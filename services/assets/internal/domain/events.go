package domain

// Internal event types of the assets context (on assets.events; not delivered to webhooks).
const (
	EventCreated  = "asset.created"
	EventTrashed  = "asset.trashed"
	EventRestored = "asset.restored"
	EventDeleted  = "asset.deleted"
)

// Reasons an asset was deleted, in asset.deleted events.
const (
	ReasonRequest   = "request"
	ReasonRetention = "retention"
)

// Event is the payload of asset.* events.
type Event struct {
	AssetID        string `json:"assetId"`
	AssetType      string `json:"assetType"`
	LifecycleState State  `json:"lifecycleState"`
	FileID         string `json:"fileId"`
	Reason         string `json:"reason,omitempty"`
}

// NewEvent returns the payload of an event about a; reason is "" unless a was deleted.
func NewEvent(a Asset, reason string) Event {
	return Event{AssetID: a.ID, AssetType: a.Type, LifecycleState: a.State, FileID: a.File.ID, Reason: reason}
}
