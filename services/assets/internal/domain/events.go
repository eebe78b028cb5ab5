package domain

import "github.com/customerapi/platform/libs/events"

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

// AssetEvent is the payload of asset.* events.
type AssetEvent struct {
	AssetID        string `json:"assetId"`
	AssetType      string `json:"assetType"`
	LifecycleState State  `json:"lifecycleState"`
	FileID         string `json:"fileId"`
	Reason         string `json:"reason,omitempty"`
}

// Event is what a change announces (the platform's events.Announcement).
type Event = events.Announcement

// Change is the update callback of every service (events.Change).
type Change[T any] = events.Change[T]

// Announce returns the event of type typ about a; reason is "" unless a was deleted.
func Announce(typ string, a Asset, reason string) Event {
	return Event{Type: typ, Subject: a.ID, Payload: AssetEvent{AssetID: a.ID, AssetType: a.Type, LifecycleState: a.State,
		FileID: a.File.ID, Reason: reason}}
}
