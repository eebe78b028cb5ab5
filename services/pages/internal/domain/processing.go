package domain

import "time"

// MaxAttempts bounds the claims of one version: a version whose processing failed this
// often (its worker crashed or erred every time) is cancelled instead of retried forever.
const MaxAttempts = 5

// Claim is a version a worker holds for processing. Attempts is the fencing token: only
// the holder of the latest claim can finish the version.
type Claim struct {
	TenantID, VersionID string
	// PageID and AudienceID are the version's page and audience.
	PageID, AudienceID string
	Attempts           int
}

// Completion is what finishing a claimed version decides; the repository stores it as a
// whole or not at all.
type Completion struct {
	// Version is the version's final state: published, draft or cancelled.
	Version Version
	// Audience is the audience after the pending changes and the version's outcome; nil
	// when the version was cancelled and the audience is left as it is.
	Audience *Audience
	// Applied are the IDs of the pending changes the snapshot includes, in order.
	Applied []string
	// Superseded is the previously published version this one makes obsolete, if any.
	Superseded *string
	// Published tells that the audience's latest message is now its published one.
	Published bool
	// Events are announced in this order.
	Events []Event
}

// GiveUp cancels a version that used up its processing attempts (false when it has
// attempts left). The audience, if this is still its latest version, is cancelled too.
func GiveUp(v Version, now time.Time) (Version, []Event, bool) {
	if v.Attempts < MaxAttempts {
		return v, nil, false
	}
	v.Status, v.CancelledAt = StatusCancelled, &now
	return v, []Event{VersionProcessedEvent(&v, now)}, true
}

// Complete decides how a claimed version finishes. A version of an archived audience is
// cancelled. Otherwise the audience's pending changes are applied in order, the snapshot
// taken, and the version published when it was asked to be (making the previously
// published version obsolete) or left as a draft; the audience takes the version's
// status if it is still its latest. It announces page.version.processed, and
// page.version.published when published.
func Complete(v Version, a Audience, pageTitle, pageContext string, pending []ContextChange, now time.Time) Completion {
	if a.ArchivedAt != nil {
		v.Status, v.CancelledAt = StatusCancelled, &now
		return Completion{Version: v, Events: []Event{VersionProcessedEvent(&v, now)}}
	}
	applied := make([]string, 0, len(pending))
	for _, c := range pending {
		a.ApplyChange(c)
		applied = append(applied, c.ID)
	}
	snap := Snap(&a, pageTitle, pageContext, applied)
	v.Snapshot = &snap
	v.SupplementaryContext = a.SupplementaryContext
	c := Completion{Applied: applied}
	if v.PublishOnComplete {
		v.Status, v.PublishedAt = StatusPublished, &now
		if prev := a.PublishedVersion; prev != nil && prev.ID != v.ID {
			c.Superseded = &prev.ID
		}
		a.PublishedVersion = &v
		c.Published = true
	} else {
		v.Status, v.BecameDraftAt = StatusDraft, &now
	}
	if a.LatestVersion != nil && a.LatestVersion.ID == v.ID {
		a.Status, a.LatestVersion = v.Status, &v
	}
	a.UpdatedAt = now
	c.Version, c.Audience = v, &a
	c.Events = []Event{VersionProcessedEvent(&v, now)}
	if c.Published {
		c.Events = append(c.Events, VersionPublishedEvent(&v, now))
	}
	return c
}
