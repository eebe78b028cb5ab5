package adapters_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// lease is the processing lease of the tests' claims.
const lease = 30 * time.Second

// claim claims the next version at the fixture's time, which must be versionID.
func (f *fixture) claim(versionID string) domain.Claim {
	f.t.Helper()
	c, err := f.store.Claim(f.ctx, f.now, lease)
	if err != nil {
		f.t.Fatalf("claim %s: %v", versionID, err)
	}
	if c.VersionID != versionID {
		f.t.Fatalf("the queue handed out version %s, want %s (next in queue order)", c.VersionID, versionID)
	}
	return c
}

// finish finishes a claim a second later.
func (f *fixture) finish(c domain.Claim) domain.Version {
	f.t.Helper()
	v, err := f.store.Finish(f.ctx, c, f.tick(time.Second))
	if err != nil {
		f.t.Fatalf("finish %s: %v", c.VersionID, err)
	}
	return v
}

// process claims and finishes the next version, which must be versionID.
func (f *fixture) process(versionID string) domain.Version {
	f.t.Helper()
	return f.finish(f.claim(versionID))
}

// eventSummary is what the tests check of a page.version.processed or
// page.version.published event.
type eventSummary struct {
	Type      string
	VersionID string
	Status    string
}

// summaries lists the processing events in the outbox (page.version.created left out).
func (f *fixture) summaries() []eventSummary {
	f.t.Helper()
	var out []eventSummary
	for _, o := range f.outboxRows("") {
		switch o.Event.Type {
		case events.TypePageVersionProcessed:
			p := payload[domain.VersionProcessed](f.t, o)
			out = append(out, eventSummary{o.Event.Type, p.VersionID, p.Status})
		case events.TypePageVersionPublished:
			p := payload[domain.VersionPublished](f.t, o)
			out = append(out, eventSummary{o.Event.Type, p.VersionID, p.Status})
		}
	}
	return out
}

func TestClaimWithNothingQueuedIsNothingToProcess(t *testing.T) {
	f := newFixture(t)
	_, err := f.store.Claim(f.ctx, f.now, lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming from an empty queue")
}

func TestClaimTakesTheOldestQueuedVersionOfAnyTenantAndLeasesIt(t *testing.T) {
	f := newFixture(t)
	older := f.createAudience(tenantB, f.createPage(tenantB).ID)
	newer := f.createAudience(tenantA, f.createPage(tenantA).ID)
	now := f.tick(1500 * time.Millisecond)

	c, err := f.store.Claim(f.ctx, now, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if c.VersionID != older.LatestVersion.ID || c.TenantID != tenantB || c.Attempts != 1 {
		t.Errorf("the worker must claim the oldest queued version whatever its tenant, as its first attempt: got %+v, want %s of %s",
			c, older.LatestVersion.ID, tenantB)
	}
	v := f.version(tenantB, c.VersionID)
	wantLease := now.Add(lease)
	if v.Status != domain.StatusProcessing || v.Attempts != 1 || !sameTime(v.LeaseUntil, &wantLease) || !sameTime(v.ProcessingAt, &now) {
		t.Errorf("a claimed version must be processing, leased until now+lease: got %+v, want lease until %v", v, wantLease)
	}
	wantQueued := float64(now.Sub(*older.LatestVersion.QueuedAt).Milliseconds())
	if v.QueueDurationMs == nil || *v.QueueDurationMs != wantQueued {
		t.Errorf("a claim must record how long the version was queued: got %v ms, want %v", v.QueueDurationMs, wantQueued)
	}
	if got := f.getAudience(older); got.Status != domain.StatusProcessing {
		t.Errorf("the audience of a claimed latest version must be processing: got %s", got.Status)
	}

	f.claim(newer.LatestVersion.ID)
	_, err = f.store.Claim(f.ctx, now, lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming while every version is leased")
}

func TestVersionsOfOneAudienceAreClaimedOneAfterAnother(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	second := f.createVersion(a)
	c := f.claim(a.LatestVersion.ID)

	_, err := f.store.Claim(f.ctx, f.now, lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming a version while an earlier one of its audience is processing")

	f.finish(c)
	f.claim(second.ID)
}

func TestAnExpiredLeaseIsTakenOverAndFencesOutTheFirstClaim(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	first := f.claim(a.LatestVersion.ID)

	_, err := f.store.Claim(f.ctx, f.now.Add(lease-time.Second), lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming a version whose lease has not expired")

	f.tick(lease + time.Second)
	second := f.claim(a.LatestVersion.ID)
	if second.Attempts != 2 {
		t.Errorf("taking over an expired lease is the version's second attempt: got attempts %d", second.Attempts)
	}

	_, err = f.store.Finish(f.ctx, first, f.tick(time.Second))
	wantErr(t, err, domain.ErrLeaseLost, "finishing with a claim whose lease was taken over")
	if v := f.version(tenantA, a.LatestVersion.ID); v.Status != domain.StatusProcessing || v.HasSnapshot {
		t.Errorf("a claim that lost its lease must change nothing: got status %s, snapshot %v", v.Status, v.HasSnapshot)
	}
	if got := f.summaries(); len(got) != 0 {
		t.Errorf("a claim that lost its lease must announce nothing: got %+v", got)
	}

	if v := f.finish(second); v.Status != domain.StatusPublished {
		t.Errorf("the claim that took over must finish the version: got status %s", v.Status)
	}
}

func TestFinishIsScopedToTheClaimsTenant(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	c := f.claim(a.LatestVersion.ID)
	forged := c
	forged.TenantID = tenantB
	_, err := f.store.Finish(f.ctx, forged, f.tick(time.Second))
	wantErr(t, err, domain.ErrLeaseLost, "finishing tenant A's version with a claim of tenant B")
	if v := f.version(tenantA, c.VersionID); v.Status != domain.StatusProcessing {
		t.Errorf("a claim of another tenant must not finish tenant A's version: got status %s", v.Status)
	}
	if got := f.summaries(); len(got) != 0 {
		t.Errorf("a claim of another tenant must announce nothing: got %+v", got)
	}
}

func TestFinishPublishesAndAnnouncesItInTheSameTransaction(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA, func(p *domain.Page) { p.Title, p.PageContext = "Boats", "we sell boats" })
	a := f.createAudience(tenantA, p.ID, func(a *domain.Audience) { a.CustomName = new("Sailors") })
	c := f.claim(a.LatestVersion.ID)
	now := f.tick(time.Second)
	v, err := f.store.Finish(f.ctx, c, now)
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	if v.Status != domain.StatusPublished || !sameTime(v.PublishedAt, &now) {
		t.Errorf("a version of a publishing audience must finish published at the given time: got status %s at %v", v.Status, v.PublishedAt)
	}
	if s := v.Snapshot; s == nil || s.PageTitle != "Boats" || s.PageContext != "we sell boats" || s.EffectiveName != "Sailors" {
		t.Errorf("the snapshot must show the page and the audience as the version was finished: got %+v", s)
	}
	row := f.version(tenantA, v.ID)
	if row.Status != domain.StatusPublished || !row.HasSnapshot || row.LeaseUntil != nil {
		t.Errorf("the finished version must be stored published with its snapshot and no lease: got %+v", row)
	}
	got := f.getAudience(a)
	if got.Status != domain.StatusPublished || got.PublishedVersion == nil || got.PublishedVersion.ID != v.ID ||
		got.LatestVersion == nil || got.LatestVersion.Status != domain.StatusPublished {
		t.Errorf("the audience must take its latest version's outcome and point at it as published: got status %s, published %+v, latest %+v",
			got.Status, got.PublishedVersion, got.LatestVersion)
	}

	want := []eventSummary{
		{events.TypePageVersionProcessed, v.ID, domain.StatusPublished},
		{events.TypePageVersionPublished, v.ID, domain.StatusPublished},
	}
	if got := f.summaries(); !slices.Equal(got, want) {
		t.Errorf("a published version must be announced processed, then published: got %+v, want %+v", got, want)
	}
	writer := f.lastWriter("audience_versions", tenantA, v.ID)
	for _, o := range f.outboxRows("") {
		if o.Event.Type == events.TypePageVersionCreated {
			continue
		}
		if o.XID != writer || o.Key != a.ID || o.Event.TenantID != tenantA {
			t.Errorf("%s must be written for the tenant, keyed by the audience, in the transaction that finishes the version: got transaction %d (version's %d), key %s, tenant %s",
				o.Event.Type, o.XID, writer, o.Key, o.Event.TenantID)
		}
	}
}

func TestFinishOfADraftAudienceLeavesADraft(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID, func(a *domain.Audience) { a.PublishBehavior = domain.BehaviorDraft })
	v := f.process(a.LatestVersion.ID)
	if v.Status != domain.StatusDraft || v.BecameDraftAt == nil || v.PublishedAt != nil {
		t.Errorf("a version of a drafting audience must finish as a draft: got status %s, draft at %v, published at %v",
			v.Status, v.BecameDraftAt, v.PublishedAt)
	}
	got := f.getAudience(a)
	if got.Status != domain.StatusDraft || got.PublishedVersion != nil {
		t.Errorf("the audience must become a draft with nothing published: got status %s, published %+v", got.Status, got.PublishedVersion)
	}
	want := []eventSummary{{events.TypePageVersionProcessed, v.ID, domain.StatusDraft}}
	if got := f.summaries(); !slices.Equal(got, want) {
		t.Errorf("a draft must be announced processed only: got %+v, want %+v", got, want)
	}
}

func TestFinishingTheSameClaimTwiceChangesNothingTheSecondTime(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	c := f.claim(a.LatestVersion.ID)
	first := f.finish(c)
	before := f.version(tenantA, first.ID)
	eventsBefore := len(f.outboxRows(""))

	_, err := f.store.Finish(f.ctx, c, f.tick(time.Minute))
	wantErr(t, err, domain.ErrLeaseLost, "finishing a finished version again")
	if n := len(f.outboxRows("")); n != eventsBefore {
		t.Errorf("finishing a version again must not announce it again: %d outbox rows before, %d after", eventsBefore, n)
	}
	if after := f.version(tenantA, first.ID); !sameTime(after.PublishedAt, before.PublishedAt) || after.Status != before.Status {
		t.Errorf("finishing a version again must not change it: published at %v, then %v", before.PublishedAt, after.PublishedAt)
	}
	_, err = f.store.Claim(f.ctx, f.now, lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming after the only version was finished")
}

func TestPublishingANewVersionMakesThePreviousOneObsolete(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	v1 := f.process(a.LatestVersion.ID)
	v2 := f.process(f.createVersion(a).ID)

	old := f.version(tenantA, v1.ID)
	if old.Status != domain.StatusArchived || !sameTime(old.ObsoleteAt, v2.PublishedAt) || !sameTime(old.ArchivedAt, v2.PublishedAt) {
		t.Errorf("the previously published version must be archived as obsolete when the next one is published: got %+v", old)
	}
	if got := f.getAudience(a); got.PublishedVersion == nil || got.PublishedVersion.ID != v2.ID {
		t.Errorf("the audience must point at the newly published version: got %+v", got.PublishedVersion)
	}
}

func TestFinishingAnOlderVersionLeavesTheAudienceOnItsLatest(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	c := f.claim(a.LatestVersion.ID)
	latest := f.createVersion(a) // queued while the first is processing
	v1 := f.finish(c)

	got := f.getAudience(a)
	if got.LatestVersion == nil || got.LatestVersion.ID != latest.ID || got.Status != domain.StatusQueued {
		t.Errorf("finishing an older version must leave the audience on its queued latest version: got status %s, latest %+v",
			got.Status, got.LatestVersion)
	}
	if got.PublishedVersion == nil || got.PublishedVersion.ID != v1.ID {
		t.Errorf("the older version, once published, must still be the audience's published one: got %+v", got.PublishedVersion)
	}
}

func TestFinishAppliesThePendingChangesAndMarksTheirMessages(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	m := f.addMessage(a, "make it nautical",
		proposal{domain.FieldSupplementaryContext, "sailors"},
		proposal{domain.FieldMetaTitle, "Ahoy"})
	v := f.process(a.LatestVersion.ID)
	later := f.addMessage(a, "after the version", proposal{domain.FieldMetaDescription, "later"})

	if v.Snapshot == nil || !slices.Equal(v.Snapshot.AppliedChangeIDs, changeIDs(m.Changes)) {
		t.Errorf("the snapshot must list the pending changes it applied, in order: got %+v, want %v", v.Snapshot, changeIDs(m.Changes))
	}
	got := f.getAudience(a)
	if got.SupplementaryContext == nil || *got.SupplementaryContext != "sailors" ||
		got.MetadataOverride == nil || got.MetadataOverride.Title == nil || *got.MetadataOverride.Title != "Ahoy" {
		t.Errorf("the applied changes must be stored on the audience: got context %v, override %+v", got.SupplementaryContext, got.MetadataOverride)
	}

	msgs := f.messages(a)
	if len(msgs.Messages) != 2 {
		t.Fatalf("read %d messages, want 2", len(msgs.Messages))
	}
	applied := msgs.Messages[0]
	if !applied.HasSnapshot {
		t.Errorf("a message whose changes a version applied must have a snapshot")
	}
	for _, c := range applied.Changes {
		if !c.Applied {
			t.Errorf("change %s was applied by the version but is not marked applied", c.ID)
		}
	}
	if msgs.Messages[1].HasSnapshot {
		t.Errorf("a message after the version must not have a snapshot")
	}
	if g, w := changeIDs(msgs.PendingChanges), changeIDs(later.Changes); !slices.Equal(g, w) {
		t.Errorf("only the changes after the version must remain pending: got %v, want %v", g, w)
	}
	if msgs.Conversation == nil || msgs.Conversation.PublishedMessageID == nil || *msgs.Conversation.PublishedMessageID != m.ID {
		t.Errorf("publishing must mark the conversation's latest message at that time as published: got %+v, want %s", msgs.Conversation, m.ID)
	}
}

func TestFinishOfAnArchivedAudienceCancelsTheVersion(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	c := f.claim(a.LatestVersion.ID)
	f.addMessage(a, "never applied", proposal{domain.FieldMetaTitle, "unused"})
	if _, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, a.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	if got := f.summaries(); len(got) != 0 {
		t.Errorf("archiving must leave a processing version to its worker: got %+v", got)
	}

	v := f.finish(c)
	if v.Status != domain.StatusCancelled || v.CancelledAt == nil || v.Snapshot != nil {
		t.Errorf("a version finished after its audience was archived must be cancelled without snapshot: got status %s, cancelled %v, snapshot %+v",
			v.Status, v.CancelledAt, v.Snapshot)
	}
	got := f.getAudience(a)
	if got.Status != domain.StatusArchived || got.PublishedVersion != nil {
		t.Errorf("a cancelled version must leave the archived audience as it is: got status %s, published %+v", got.Status, got.PublishedVersion)
	}
	if n := len(f.messages(a).PendingChanges); n != 1 {
		t.Errorf("a cancelled version must apply no change: %d pending, want 1", n)
	}
	want := []eventSummary{{events.TypePageVersionProcessed, v.ID, domain.StatusCancelled}}
	if got := f.summaries(); !slices.Equal(got, want) {
		t.Errorf("a cancelled version must be announced processed (cancelled) only: got %+v, want %+v", got, want)
	}
}

func TestFinishAfterThePageWasDeletedStillFinishesTheVersion(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	c := f.claim(a.LatestVersion.ID)
	f.deletePage(p)

	v, err := f.store.Finish(f.ctx, c, f.tick(time.Second))
	if err != nil {
		t.Fatalf("a claimed version must finish even when its page was deleted meanwhile: %v", err)
	}
	if v.Status != domain.StatusPublished {
		t.Errorf("the version of a deleted page's live audience finishes as usual: got status %s", v.Status)
	}
	if got := f.summaries(); len(got) == 0 || got[0].Type != events.TypePageVersionProcessed {
		t.Errorf("the version must reach its page.version.processed event: got %+v", got)
	}
}

func TestClaimGivesUpOnAVersionThatUsedUpItsAttempts(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	var last domain.Claim
	for i := 1; i <= domain.MaxAttempts; i++ {
		last = f.claim(a.LatestVersion.ID) // each worker dies: its lease runs out
		f.tick(lease + time.Second)
	}
	now := f.now
	_, err := f.store.Claim(f.ctx, now, lease)
	wantErr(t, err, domain.ErrGaveUp, "claiming a version after its last attempt's lease ran out")

	v := f.version(tenantA, a.LatestVersion.ID)
	if v.Status != domain.StatusCancelled || !sameTime(v.CancelledAt, &now) || v.LeaseUntil != nil || v.Attempts != domain.MaxAttempts {
		t.Errorf("a version that used up its attempts must be cancelled, released and not attempted again: got %+v", v)
	}
	if got := f.getAudience(a); got.Status != domain.StatusCancelled {
		t.Errorf("the audience whose latest version was given up on must be cancelled: got %s", got.Status)
	}
	want := []eventSummary{{events.TypePageVersionProcessed, a.LatestVersion.ID, domain.StatusCancelled}}
	if got := f.summaries(); !slices.Equal(got, want) {
		t.Errorf("giving up must announce the version processed (cancelled), once: got %+v, want %+v", got, want)
	}
	for _, o := range f.outboxRows(events.TypePageVersionProcessed) {
		if w := f.lastWriter("audience_versions", tenantA, a.LatestVersion.ID); o.XID != w {
			t.Errorf("the give-up event must be written in the transaction that cancels the version")
		}
	}

	_, err = f.store.Claim(f.ctx, f.tick(time.Hour), lease)
	wantErr(t, err, domain.ErrNothingToProcess, "claiming after the only version was given up on")
	_, err = f.store.Finish(f.ctx, last, f.tick(time.Second))
	wantErr(t, err, domain.ErrLeaseLost, "finishing the last attempt after the version was given up on")
	if n := len(f.summaries()); n != 1 {
		t.Errorf("a given-up version must be announced once: got %d events", n)
	}
}

// The version worker's claim is one statement, one wait for the server, and its finish
// waits four times: BEGIN, the reads together, the writes together, COMMIT. The finish's
// writes are as many as its outcome needs (applied changes, a superseded version, two
// events), in the same round trip.
func TestClaimAndFinishSendTheirStatementsTogether(t *testing.T) {
	f := newFixture(t)
	a := f.createAudience(tenantA, f.createPage(tenantA).ID)
	f.addMessage(a, "make it nautical", proposal{domain.FieldMetaTitle, "Ahoy"})
	store, trips := f.countedStore()
	for i, versionID := range []string{a.LatestVersion.ID, f.createVersion(a).ID} {
		trips.Take()
		c, err := store.Claim(f.ctx, f.now, lease)
		if err != nil || c.VersionID != versionID {
			t.Fatalf("claim %d: got %s, %v; want %s", i+1, c.VersionID, err, versionID)
		}
		if got := trips.Take(); got != 1 {
			t.Errorf("claim %d must take 1 round trip (one statement finds, leases and marks): took %d", i+1, got)
		}
		v, err := store.Finish(f.ctx, c, f.tick(time.Second))
		if err != nil || v.Status != domain.StatusPublished {
			t.Fatalf("finish %d: got status %s, %v; want published", i+1, v.Status, err)
		}
		if got := trips.Take(); got != 4 {
			t.Errorf("finish %d must take 4 round trips (BEGIN, the reads, the writes, COMMIT): took %d", i+1, got)
		}
	}
	if got := f.summaries(); len(got) != 4 {
		t.Errorf("two published versions must be announced processed and published each: got %+v", got)
	}
}

func TestFinishRefusesAClaimNamingAnotherAudience(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	other := f.createAudience(tenantA, p.ID)
	c := f.claim(a.LatestVersion.ID)
	forged := c
	forged.AudienceID = other.ID
	if _, err := f.store.Finish(f.ctx, forged, f.tick(time.Second)); err == nil {
		t.Fatalf("a claim naming another audience than its version's must not finish")
	}
	if v := f.version(tenantA, c.VersionID); v.Status != domain.StatusProcessing {
		t.Errorf("a refused finish must leave the version processing: got %s", v.Status)
	}
	if v := f.finish(c); v.Status != domain.StatusPublished {
		t.Errorf("the true claim must still finish the version: got %s", v.Status)
	}
}

// The claim takes the oldest unfinished version whose audience has no earlier unfinished
// one. Finding that out must read neither the audience's finished versions (an audience
// edited for years has thousands) nor the other audiences' queued ones (a backlog): with
// the work queue's index alone, every claim read the whole backlog, and under load the
// worker fell further behind the more it had to do.
func TestClaimReadsNeitherFinishedVersionsNorTheBacklog(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	f.process(a.LatestVersion.ID)
	const finished, backlog = 3000, 3000
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO audience_versions (id, tenant_id, page_id, audience_id, version_number,
			status, is_new_page_agent, publish_on_complete, created_at, queued_at, attempts)
		SELECT 'version_old' || i, $1, $2, $3, i + 1, 'draft', true, false, $4, $4, 1
		FROM generate_series(1, $5::int) AS i`, tenantA, p.ID, a.ID, f.now, finished); err != nil {
		t.Fatal(err)
	}
	next := f.createVersion(a)
	// Three other audiences, each with its first version in process and a backlog queued
	// after the audience's next version.
	for n := range 3 {
		other := f.createAudience(tenantA, p.ID)
		if _, err := f.pool.Exec(f.ctx, `UPDATE audience_versions SET status = 'processing', lease_until = $2
			WHERE id = $1`, other.LatestVersion.ID, f.now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.pool.Exec(f.ctx, `INSERT INTO audience_versions (id, tenant_id, page_id, audience_id, version_number,
				status, is_new_page_agent, publish_on_complete, created_at, queued_at)
			SELECT 'version_backlog' || $6::int || '_' || i, $1, $2, $3, i + 1, 'queued', true, false, $4::timestamptz,
				$4 + i * interval '1 millisecond'
			FROM generate_series(1, $5::int) AS i`, tenantA, p.ID, other.ID, f.now.Add(time.Minute), backlog/3, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Exec(f.ctx, "ANALYZE audience_versions"); err != nil {
		t.Fatal(err)
	}
	log := &pgtest.StatementLog{}
	if c, err := adapters.NewStore(pgtest.Traced(t, f.pool, log), outbox.Writer{}).Claim(f.ctx, f.now, lease); err != nil || c.VersionID != next.ID {
		t.Fatalf("claim: got %s, %v; want %s", c.VersionID, err, next.ID)
	}
	var claim *pgtest.Statement
	for _, st := range log.Take() {
		if strings.Contains(st.SQL, "FOR UPDATE OF v SKIP LOCKED") {
			claim = &st
		}
	}
	if claim != nil {
		claim.Args[0] = f.now.Add(2 * lease)
	}
	if claim == nil {
		t.Fatal("the claim's statement was not sent")
	}
	// Read again once the lease has run out, the claim takes the same version.
	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	run, err := pgtest.Explain(f.ctx, tx, *claim)
	if err != nil {
		t.Fatal(err)
	}
	if run.Rows != 1 || run.Pages > 40 {
		t.Errorf("with %d finished versions of the audience and %d queued of others, the claim read %d pages for %d rows: it must read a few for one row",
			finished, backlog, run.Pages, run.Rows)
	}
}
