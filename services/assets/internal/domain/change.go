package domain

// Change is what an update did: the event to emit ("" for none) and the objects that
// must now be removed.
type Change struct {
	Event  string
	Reason string
	Remove []string
}

// Filter narrows a list of assets.
type Filter struct {
	// Type is an asset type, or "" for all.
	Type string
	// Query matches name or any tag, case-insensitively, as a substring ("" for all).
	Query string
}
