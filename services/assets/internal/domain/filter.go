package domain

// Filter narrows a list of assets.
type Filter struct {
	// Type is an asset type, or "" for all.
	Type string
	// Query matches name or any tag, case-insensitively, as a substring ("" for all).
	Query string
}
