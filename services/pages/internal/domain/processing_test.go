package domain

import (
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
)

func eventTypes(evts []Event) []string {
	out := make([]string, len(evts))
	for i, e := range evts {
		out[i] = e.Type
	}
	return out
}

func TestCompleteDecidesHowAVersionFinishes(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	old := Version{ID: "ver_old", AudienceID: "aud_1", Status: StatusPublished}
	v := Version{ID: "ver_new", AudienceID: "aud_1", PageID: "page_1", Status: StatusProcessing, Attempts: 1}
	audience := func() Audience {
		latest := v
		return Audience{ID: "aud_1", Status: StatusProcessing, LatestVersion: &latest, PublishedVersion: &old}
	}
	pending := []ContextChange{{ID: "chg_1", Field: FieldSupplementaryContext, NewValue: "first"},
		{ID: "chg_2", Field: FieldSupplementaryContext, NewValue: "second"}}

	t.Run("an archived audience's version is cancelled and nothing else changes", func(t *testing.T) {
		a := audience()
		a.ArchivedAt = &now
		done := Complete(v, a, "Title", "ctx", pending, now)
		if done.Version.Status != StatusCancelled || done.Version.CancelledAt == nil || done.Audience != nil ||
			len(done.Applied) != 0 || done.Superseded != nil || done.Published {
			t.Fatalf("cancelled completion must change only the version: %+v", done)
		}
		if got := eventTypes(done.Events); len(got) != 1 || got[0] != events.TypePageVersionProcessed {
			t.Fatalf("a cancelled version announces page.version.processed only, got %v", got)
		}
	})

	t.Run("a draft applies the pending changes in order and becomes the audience's status", func(t *testing.T) {
		done := Complete(v, audience(), "Title", "ctx", pending, now)
		if done.Version.Status != StatusDraft || done.Version.BecameDraftAt == nil || done.Published || done.Superseded != nil {
			t.Fatalf("a version not asked to publish becomes a draft and publishes nothing: %+v", done.Version)
		}
		if len(done.Applied) != 2 || done.Applied[0] != "chg_1" || done.Applied[1] != "chg_2" {
			t.Fatalf("applied %v; every pending change is applied, in the order made", done.Applied)
		}
		if done.Version.SupplementaryContext == nil || *done.Version.SupplementaryContext != "second" || done.Version.Snapshot == nil {
			t.Fatal("the snapshot and context must be the audience's after the last change")
		}
		if done.Audience.Status != StatusDraft || done.Audience.LatestVersion.ID != v.ID || !done.Audience.UpdatedAt.Equal(now) {
			t.Fatalf("the audience takes its latest version's status: %+v", done.Audience)
		}
		if got := eventTypes(done.Events); len(got) != 1 || got[0] != events.TypePageVersionProcessed {
			t.Fatalf("a draft announces page.version.processed only, got %v", got)
		}
	})

	t.Run("a version asked to publish supersedes the published one and announces both events", func(t *testing.T) {
		w := v
		w.PublishOnComplete = true
		done := Complete(w, audience(), "Title", "ctx", nil, now)
		if done.Version.Status != StatusPublished || done.Version.PublishedAt == nil || !done.Published {
			t.Fatalf("the version must be published: %+v", done.Version)
		}
		if done.Superseded == nil || *done.Superseded != "ver_old" || done.Audience.PublishedVersion.ID != w.ID {
			t.Fatal("the previously published version must be made obsolete and the new one become the published one")
		}
		got := eventTypes(done.Events)
		if len(got) != 2 || got[0] != events.TypePageVersionProcessed || got[1] != events.TypePageVersionPublished {
			t.Fatalf("events %v; want processed then published", got)
		}
	})

	t.Run("a version that is no longer the latest leaves the audience's status alone", func(t *testing.T) {
		a := audience()
		a.LatestVersion = &Version{ID: "ver_newer", Status: StatusQueued}
		a.Status = StatusQueued
		done := Complete(v, a, "Title", "ctx", nil, now)
		if done.Audience.Status != StatusQueued || done.Audience.LatestVersion.ID != "ver_newer" {
			t.Fatalf("an older version's outcome must not overwrite the audience's latest: %+v", done.Audience)
		}
	})
}

func TestGiveUpCancelsOnlyAVersionOutOfAttempts(t *testing.T) {
	now := time.Now()
	if _, evts, gaveUp := GiveUp(Version{Attempts: MaxAttempts - 1}, now); gaveUp || evts != nil {
		t.Fatal("a version with attempts left must be retried, not cancelled")
	}
	v, evts, gaveUp := GiveUp(Version{Attempts: MaxAttempts, AudienceID: "aud_1"}, now)
	if !gaveUp || v.Status != StatusCancelled || v.CancelledAt == nil || len(evts) != 1 || evts[0].Type != events.TypePageVersionProcessed {
		t.Fatalf("a version out of attempts is cancelled and announces it: %+v %v", v, evts)
	}
}
