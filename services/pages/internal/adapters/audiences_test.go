package adapters_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

func TestCreateAudienceStoresItWithItsFirstQueuedVersion(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA, func(p *domain.Page) { p.Metadata = &domain.Metadata{Title: new("Page title")} })
	a, v := newAudience(tenantA, p.ID, f.tick(time.Second))
	a.CustomName, a.SupplementaryContext = new("VIPs"), new("they like blue")
	a.MetadataOverride = &domain.Metadata{Description: new("for VIPs")}
	created, err := storeAudience(f.store, f.ctx, a, v)
	if err != nil {
		t.Fatalf("create audience: %v", err)
	}
	if created.ComputedName != "Audience 1" || created.LatestVersion == nil || created.LatestVersion.ID != v.ID {
		t.Errorf("CreateAudience must return the audience named by its ordinal with its version as latest: got name %q, latest %+v",
			created.ComputedName, created.LatestVersion)
	}

	got := f.getAudience(a)
	if got.ComputedName != "Audience 1" || got.CustomName == nil || *got.CustomName != "VIPs" ||
		got.SupplementaryContext == nil || *got.SupplementaryContext != "they like blue" || got.Status != domain.StatusQueued ||
		got.PublishBehavior != domain.BehaviorPublish || !got.IsNewPageAgent {
		t.Errorf("the stored audience must read back as created: got %+v", got)
	}
	if got.MetadataOverride == nil || got.MetadataOverride.Description == nil || *got.MetadataOverride.Description != "for VIPs" {
		t.Errorf("the audience's metadata override must read back: got %+v", got.MetadataOverride)
	}
	if got.PageMetadata == nil || got.PageMetadata.Title == nil || *got.PageMetadata.Title != "Page title" {
		t.Errorf("an audience must be read with its page's metadata: got %+v", got.PageMetadata)
	}
	if got.LatestVersion == nil || got.LatestVersion.ID != v.ID || got.LatestVersion.Status != domain.StatusQueued ||
		got.LatestVersion.VersionNumber != 1 || !got.LatestVersion.PublishOnComplete {
		t.Errorf("the audience's latest version must be its first, queued version: got %+v", got.LatestVersion)
	}
	if got.PublishedVersion != nil {
		t.Errorf("a new audience has no published version: got %+v", got.PublishedVersion)
	}
	page, err := f.store.GetPage(f.ctx, tenantA, p.ID)
	if err != nil {
		t.Fatalf("get page: %v", err)
	}
	if page.AudiencesCount != 1 {
		t.Errorf("creating an audience must count it on its page: got %d, want 1", page.AudiencesCount)
	}
}

func TestAudiencesAreNamedByTheirOrdinalOnThePage(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	other := f.createPage(tenantA)
	first := f.createAudience(tenantA, p.ID)
	second := f.createAudience(tenantA, p.ID)
	onOther := f.createAudience(tenantA, other.ID)
	if _, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, second.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	third := f.createAudience(tenantA, p.ID)

	for _, c := range []struct {
		rule string
		got  domain.Audience
		want string
	}{
		{"the first audience of a page", first, "Audience 1"},
		{"the second audience of a page", second, "Audience 2"},
		{"an audience after an archived one (ordinals are never reused)", third, "Audience 3"},
		{"the first audience of another page (ordinals count per page)", onOther, "Audience 1"},
	} {
		if c.got.ComputedName != c.want {
			t.Errorf("%s: got computed name %q, want %q", c.rule, c.got.ComputedName, c.want)
		}
	}
}

func TestCreateAudienceRefusesAPageItCannotUse(t *testing.T) {
	f := newFixture(t)
	deleted := f.createPage(tenantA)
	f.deletePage(deleted)
	archived := f.createPage(tenantA)
	f.archivePage(archived)
	ofB := f.createPage(tenantB)

	for _, c := range []struct {
		rule   string
		pageID string
		want   error
	}{
		{"an audience of a page that was never created", ids.New("page"), domain.ErrPageNotFound},
		{"an audience of a deleted page", deleted.ID, domain.ErrPageNotFound},
		{"an audience of an archived page", archived.ID, domain.ErrPageArchived},
		{"an audience of tenant A on tenant B's page", ofB.ID, domain.ErrPageNotFound},
	} {
		a, v := newAudience(tenantA, c.pageID, f.tick(time.Second))
		_, err := storeAudience(f.store, f.ctx, a, v)
		wantErr(t, err, c.want, c.rule)
		if n := f.count("SELECT count(*) FROM audiences"); n != 0 {
			t.Errorf("%s: a refused audience must not be stored: %d audiences", c.rule, n)
		}
		if n := f.count("SELECT count(*) FROM audience_versions"); n != 0 {
			t.Errorf("%s: a refused audience's version must not be stored: %d versions", c.rule, n)
		}
		if n := len(f.outboxRows("")); n != 0 {
			t.Errorf("%s: a refused audience must announce nothing: %d outbox rows", c.rule, n)
		}
	}
	if n := f.count("SELECT coalesce(sum(audiences_count), 0) FROM pages"); n != 0 {
		t.Errorf("a refused audience must not be counted on any page: got %d", n)
	}
}

func TestCreateAudienceAnnouncesItsVersionInTheSameTransaction(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	created := f.outboxRows("")
	if len(created) != 1 {
		t.Fatalf("creating an audience must write exactly one event: got %d", len(created))
	}
	o := created[0]
	if o.Topic != events.TopicPages || o.Key != a.ID || o.Event.Type != events.TypePageVersionCreated ||
		o.Event.TenantID != tenantA || o.Event.Subject != a.ID {
		t.Errorf("the event must be page.version.created of the tenant on the pages topic, keyed by the audience: got topic %s key %s %+v",
			o.Topic, o.Key, o.Event)
	}
	if got := payload[domain.VersionCreated](t, o); got.PageID != p.ID || got.VersionID != a.LatestVersion.ID {
		t.Errorf("page.version.created must name the page and the new version: got %+v, want page %s version %s",
			got, p.ID, a.LatestVersion.ID)
	}
	if w := f.lastWriter("audience_versions", tenantA, a.LatestVersion.ID); o.XID != w {
		t.Errorf("the event must be written in the transaction that stores the version: event by transaction %d, version by %d", o.XID, w)
	}
}

func TestCreateAudienceStoresNothingWhenItsEventCannotBeWritten(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	store := adapters.NewStore(f.pool, outbox.Writer{MaxMessageBytes: 64}) // every event is too large
	a, v := newAudience(tenantA, p.ID, f.tick(time.Second))
	_, err := storeAudience(store, f.ctx, a, v)
	wantErr(t, err, events.ErrTooLarge, "an audience whose event the outbox refuses")
	if n := f.count("SELECT count(*) FROM audiences") + f.count("SELECT count(*) FROM audience_versions"); n != 0 {
		t.Errorf("the audience and its version must not be stored without their event: %d rows", n)
	}
	if page, err := f.store.GetPage(f.ctx, tenantA, p.ID); err != nil || page.AudiencesCount != 0 {
		t.Errorf("the audience must not be counted without its event: got count %d, %v", page.AudiencesCount, err)
	}
}

func TestAudiencesOfOneTenantAreInvisibleToAnother(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	audA := f.createAudience(tenantA, pageA.ID)
	pageB := f.createPage(tenantB)
	f.createAudience(tenantB, pageB.ID)

	// Tenant B names tenant A's page and audience, then its own page with A's audience.
	for _, c := range []struct {
		where  string
		pageID string
		want   error
	}{
		{"on tenant A's page", pageA.ID, domain.ErrPageNotFound},
		{"on tenant B's own page", pageB.ID, domain.ErrAudienceNotFound},
	} {
		_, err := f.store.GetAudience(f.ctx, tenantB, c.pageID, audA.ID)
		wantErr(t, err, c.want, "tenant B read tenant A's audience "+c.where)

		_, err = f.store.UpdateAudience(f.ctx, tenantB, c.pageID, audA.ID, update(func(a *domain.Audience) error {
			t.Errorf("tenant B's update was handed tenant A's audience %s", c.where)
			a.CustomName = new("taken over")
			return nil
		}))
		wantErr(t, err, c.want, "tenant B updated tenant A's audience "+c.where)

		_, err = archiveAudience(f.store, f.ctx, tenantB, c.pageID, audA.ID, f.tick(time.Second))
		wantErr(t, err, c.want, "tenant B archived tenant A's audience "+c.where)

		v := f.newVersion(audA, nil)
		v.TenantID, v.PageID = tenantB, c.pageID
		_, _, err = storeVersion(f.store, f.ctx, v)
		wantErr(t, err, c.want, "tenant B queued a version of tenant A's audience "+c.where)

		_, _, err = f.store.ListVersions(f.ctx, tenantB, c.pageID, audA.ID, 0, 10)
		wantErr(t, err, c.want, "tenant B listed the versions of tenant A's audience "+c.where)

		_, err = adapters.PageOfAudience(f.ctx, f.pool, tenantB, audA.ID, "")
		wantErr(t, err, domain.ErrAudienceNotFound, "the audience existence check found tenant A's audience for tenant B")
	}

	_, _, err := f.store.ListAudiences(f.ctx, tenantB, pageA.ID, "", 10)
	wantErr(t, err, domain.ErrPageNotFound, "tenant B listed the audiences of tenant A's page")
	list, total, err := f.store.ListAudiences(f.ctx, tenantB, pageB.ID, "", 10)
	if err != nil || len(list) != 1 || total != 1 || list[0].TenantID != tenantB {
		t.Errorf("tenant B's audience list must hold its one audience only: got %d (total %d), %v", len(list), total, err)
	}

	got := f.getAudience(audA)
	if got.CustomName != nil || got.ArchivedAt != nil || got.Status != domain.StatusQueued || got.LatestVersion.ID != audA.LatestVersion.ID {
		t.Errorf("tenant A's audience must be untouched by tenant B: got custom name %v, archived %v, status %s, latest %s",
			got.CustomName, got.ArchivedAt, got.Status, got.LatestVersion.ID)
	}
	if n := f.count("SELECT count(*) FROM audience_versions WHERE tenant_id = $1", tenantA); n != 1 {
		t.Errorf("tenant B must not have queued versions for tenant A: tenant A has %d versions, want 1", n)
	}
	if n := len(f.outboxRows(events.TypePageVersionProcessed)); n != 0 {
		t.Errorf("tenant B's archive must not cancel tenant A's versions: %d page.version.processed events", n)
	}
}

func TestOneAudienceIDInTwoTenantsIsTwoAudiences(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	audA := f.createAudience(tenantA, pageA.ID)
	// Tenant B has a page and an audience with the same IDs as tenant A's.
	pageB := f.createPage(tenantB, func(p *domain.Page) { p.ID = pageA.ID })
	a, v := newAudience(tenantB, pageB.ID, f.tick(time.Second))
	a.ID, v.AudienceID, v.ID = audA.ID, audA.ID, audA.LatestVersion.ID // even its first version's ID
	audB, err := storeAudience(f.store, f.ctx, a, v)
	if err != nil {
		t.Fatalf("create tenant B's audience: %v", err)
	}
	for _, c := range []struct {
		tenant string
		aud    domain.Audience
	}{{tenantA, audA}, {tenantB, audB}} {
		got := f.getAudience(c.aud)
		if got.TenantID != c.tenant || got.LatestVersion == nil || got.LatestVersion.TenantID != c.tenant {
			t.Errorf("reading %s's audience must resolve its own latest version under shared IDs: got audience of %s, latest %+v",
				c.tenant, got.TenantID, got.LatestVersion)
		}
		list, total, err := f.store.ListAudiences(f.ctx, c.tenant, pageA.ID, "", 10)
		if err != nil || total != 1 || len(list) != 1 || list[0].TenantID != c.tenant ||
			list[0].LatestVersion == nil || list[0].LatestVersion.TenantID != c.tenant {
			t.Errorf("listing %s's page must show its one audience with its own version under shared IDs: got %d (total %d), %v",
				c.tenant, len(list), total, err)
		}
	}
	key := new("op-shared")
	if _, _, err := storeVersion(f.store, f.ctx, f.newVersion(audA, key)); err != nil {
		t.Fatalf("create tenant A's keyed version: %v", err)
	}

	if _, err := f.store.UpdateAudience(f.ctx, tenantB, pageB.ID, audB.ID, update(func(a *domain.Audience) error {
		a.CustomName = new("B's")
		return nil
	})); err != nil {
		t.Fatalf("update tenant B's audience: %v", err)
	}
	vB := f.createVersion(audB)
	if vB.VersionNumber != 2 {
		t.Errorf("tenant B's audience must number its versions apart from tenant A's of the same ID: got number %d, want 2", vB.VersionNumber)
	}
	if _, created, err := storeVersion(f.store, f.ctx, f.newVersion(audB, key)); err != nil || !created {
		t.Errorf("an operation key tenant A used must be new to tenant B's audience of the same ID: created %v, %v", created, err)
	}
	if _, err := archiveAudience(f.store, f.ctx, tenantB, pageB.ID, audB.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive tenant B's audience: %v", err)
	}

	got := f.getAudience(audA)
	if got.CustomName != nil || got.ArchivedAt != nil || got.Status != domain.StatusQueued {
		t.Errorf("changing tenant B's audience changed tenant A's audience of the same ID: custom name %v, archived %v, status %s",
			got.CustomName, got.ArchivedAt, got.Status)
	}
	if got.LatestVersion == nil || got.LatestVersion.TenantID != tenantA || got.LatestVersion.Status != domain.StatusQueued {
		t.Errorf("tenant B's versions must not become or cancel tenant A's latest version: got %+v", got.LatestVersion)
	}
	if b := f.getAudience(audB); b.LatestVersion == nil || b.LatestVersion.TenantID != tenantB || b.LatestVersion.Status != domain.StatusCancelled {
		t.Errorf("tenant B's archived audience must show its own cancelled latest version: got %+v", b.LatestVersion)
	}
	if n := f.count("SELECT count(*) FROM audience_versions WHERE tenant_id = $1 AND status = 'queued'", tenantA); n != 2 {
		t.Errorf("archiving tenant B's audience must not cancel tenant A's versions of the same audience ID: %d of 2 still queued", n)
	}
	if page, err := f.store.GetPage(f.ctx, tenantA, pageA.ID); err != nil || page.AudiencesCount != 1 {
		t.Errorf("tenant B's audience must be counted on tenant B's page only: tenant A's page counts %d, %v", page.AudiencesCount, err)
	}
	for _, c := range []struct {
		tenant string
		want   int64
	}{{tenantA, 2}, {tenantB, 3}} {
		list, total, err := f.store.ListVersions(f.ctx, c.tenant, pageA.ID, audA.ID, 0, 10)
		if err != nil || total != c.want || int64(len(list)) != c.want {
			t.Errorf("listing %s's versions under shared IDs must list and count its own %d: got %d (total %d), %v",
				c.tenant, c.want, len(list), total, err)
		}
		for _, v := range list {
			if v.TenantID != c.tenant {
				t.Errorf("listing %s's versions showed version %s of %s", c.tenant, v.ID, v.TenantID)
			}
		}
	}
}

func TestAudienceOfAnotherPageIsNotFound(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	other := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)

	_, err := f.store.GetAudience(f.ctx, tenantA, other.ID, a.ID)
	wantErr(t, err, domain.ErrAudienceNotFound, "reading an audience under a page it does not belong to")
	_, err = f.store.UpdateAudience(f.ctx, tenantA, other.ID, a.ID, update(func(*domain.Audience) error {
		t.Error("an update under the wrong page was handed the audience")
		return nil
	}))
	wantErr(t, err, domain.ErrAudienceNotFound, "updating an audience under a page it does not belong to")
	_, err = archiveAudience(f.store, f.ctx, tenantA, other.ID, a.ID, f.now)
	wantErr(t, err, domain.ErrAudienceNotFound, "archiving an audience under a page it does not belong to")
	v := f.newVersion(a, nil)
	v.PageID = other.ID
	_, _, err = storeVersion(f.store, f.ctx, v)
	wantErr(t, err, domain.ErrAudienceNotFound, "queuing a version under a page the audience does not belong to")
	_, _, err = f.store.ListVersions(f.ctx, tenantA, other.ID, a.ID, 0, 10)
	wantErr(t, err, domain.ErrAudienceNotFound, "listing versions under a page the audience does not belong to")
	_, err = f.store.GetAudience(f.ctx, tenantA, p.ID, ids.New("audience"))
	wantErr(t, err, domain.ErrAudienceNotFound, "reading an audience that was never created")
}

func TestAudienceOfADeletedPageIsGone(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	f.deletePage(p)

	_, err := f.store.GetAudience(f.ctx, tenantA, p.ID, a.ID)
	wantErr(t, err, domain.ErrPageNotFound, "reading an audience of a deleted page")
	_, _, err = f.store.ListAudiences(f.ctx, tenantA, p.ID, "", 10)
	wantErr(t, err, domain.ErrPageNotFound, "listing the audiences of a deleted page")
	_, _, err = storeVersion(f.store, f.ctx, f.newVersion(a, nil))
	wantErr(t, err, domain.ErrPageNotFound, "queuing a version of an audience of a deleted page")
	_, err = adapters.PageOfAudience(f.ctx, f.pool, tenantA, a.ID, "")
	wantErr(t, err, domain.ErrAudienceNotFound, "the audience existence check of an audience of a deleted page")
}

func TestCheckPageFindsOnlyTheTenantsVisiblePages(t *testing.T) {
	f := newFixture(t)
	visible := f.createPage(tenantA)
	archived := f.createPage(tenantA)
	f.archivePage(archived)
	deleted := f.createPage(tenantA)
	f.deletePage(deleted)
	ofB := f.createPage(tenantB)

	for _, c := range []struct {
		rule   string
		pageID string
		want   error
	}{
		{"a visible page exists", visible.ID, nil},
		{"an archived page still exists", archived.ID, nil},
		{"a deleted page does not exist", deleted.ID, domain.ErrPageNotFound},
		{"another tenant's page does not exist", ofB.ID, domain.ErrPageNotFound},
		{"a page never created does not exist", ids.New("page"), domain.ErrPageNotFound},
	} {
		if err := adapters.CheckPage(f.ctx, f.pool, tenantA, c.pageID); !errors.Is(err, c.want) {
			t.Errorf("%s: CheckPage got %v, want %v", c.rule, err, c.want)
		}
	}
}

func TestPageOfAudienceFindsOnlyTheTenantsVisibleAudiences(t *testing.T) {
	f := newFixture(t)
	r := f.reach(t)
	p, other, a, archived, ofGone := r.page, r.other, r.audience, r.archived, r.ofGone
	pageB := f.createPage(tenantB)
	ofB := f.createAudience(tenantB, pageB.ID)

	for _, c := range []struct {
		rule       string
		audienceID string
		wantPage   string
		page       string
		err        error
	}{
		{"an audience's page is found", a.ID, "", p.ID, nil},
		{"an audience of the wanted page is found", a.ID, p.ID, p.ID, nil},
		{"an archived audience still exists", archived.ID, "", p.ID, nil},
		{"an audience of another page than the wanted one is not found", a.ID, other.ID, "", domain.ErrAudienceNotFound},
		{"an audience of a deleted page is not found", ofGone.ID, "", "", domain.ErrAudienceNotFound},
		{"another tenant's audience is not found", ofB.ID, "", "", domain.ErrAudienceNotFound},
		{"an audience never created is not found", ids.New("audience"), "", "", domain.ErrAudienceNotFound},
	} {
		got, err := adapters.PageOfAudience(f.ctx, f.pool, tenantA, c.audienceID, c.wantPage)
		if !errors.Is(err, c.err) || got != c.page {
			t.Errorf("%s: PageOfAudience got %q, %v; want %q, %v", c.rule, got, err, c.page, c.err)
		}
	}
}

func TestExistenceChecksWorkInsideATransaction(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	err := postgres.InTx(f.ctx, f.pool, func(tx pgx.Tx) error {
		if err := adapters.CheckPage(f.ctx, tx, tenantA, p.ID); err != nil {
			return err
		}
		_, err := adapters.PageOfAudience(f.ctx, tx, tenantA, a.ID, p.ID)
		return err
	})
	if err != nil {
		t.Errorf("the existence checks must accept a transaction as a postgres.Conn and find what it sees: %v", err)
	}
}

func TestListAudiencesWalksThePagesAudiencesInIDOrderWithTheirVersions(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	other := f.createPage(tenantA)
	var want []domain.Audience
	for i := 0; i < 5; i++ {
		want = append(want, f.createAudience(tenantA, p.ID))
		f.createAudience(tenantA, other.ID) // interleaved audiences of another page
	}
	var got []domain.Audience
	after := ""
	for calls := 0; calls < 10; calls++ {
		list, total, err := f.store.ListAudiences(f.ctx, tenantA, p.ID, after, 2)
		if err != nil {
			t.Fatalf("list audiences after %q: %v", after, err)
		}
		if total != 5 {
			t.Errorf("every page of the list must carry the count of the page's audiences: got %d, want 5", total)
		}
		if len(list) == 0 {
			break
		}
		got = append(got, list...)
		after = list[len(list)-1].ID
	}
	if len(got) != len(want) {
		t.Fatalf("walking the list with the last ID as cursor must visit each audience of the page once: got %d, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID {
			t.Errorf("audience %d: the list must be in ID (creation) order: got %s, want %s", i, got[i].ID, want[i].ID)
		}
		if got[i].LatestVersion == nil || got[i].LatestVersion.ID != want[i].LatestVersion.ID {
			t.Errorf("audience %d: a listed audience must carry its latest version: got %+v, want %s", i, got[i].LatestVersion, want[i].LatestVersion.ID)
		}
	}
}

func TestUpdateAudienceStoresWhatFnChanged(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	now := f.tick(time.Second)
	patch := domain.AudiencePatch{
		SetCustomName: true, CustomName: new("Returning visitors"),
		SetSupplementaryContext: true, SupplementaryContext: new("came back twice"),
		SetActionFormIDOverride: true, ActionFormIDOverride: new("form_9"),
		SetActionFormInstructionsOverride: true, ActionFormInstructionsOverride: new("ask for the budget"),
		SetActionURLOverride: true, ActionURLOverride: new("https://example.com/back"),
		SetMetadataOverride: true, MetadataOverride: &domain.Metadata{Title: new("Welcome back")},
		PublishBehavior: new(domain.BehaviorDraft),
	}
	if _, err := f.store.UpdateAudience(f.ctx, tenantA, p.ID, a.ID, update(func(a *domain.Audience) error {
		a.Apply(patch, now)
		return nil
	})); err != nil {
		t.Fatalf("update audience: %v", err)
	}
	got := f.getAudience(a)
	for _, c := range []struct {
		field     string
		got, want *string
	}{
		{"customName", got.CustomName, patch.CustomName},
		{"supplementaryContext", got.SupplementaryContext, patch.SupplementaryContext},
		{"actionFormIdOverride", got.ActionFormIDOverride, patch.ActionFormIDOverride},
		{"actionFormInstructionsOverride", got.ActionFormInstructionsOverride, patch.ActionFormInstructionsOverride},
		{"actionUrlOverride", got.ActionURLOverride, patch.ActionURLOverride},
		{"publishBehavior", &got.PublishBehavior, patch.PublishBehavior},
	} {
		if c.got == nil || *c.got != *c.want {
			t.Errorf("the update of %s must be stored: got %v, want %q", c.field, c.got, *c.want)
		}
	}
	if got.MetadataOverride == nil || got.MetadataOverride.Title == nil || *got.MetadataOverride.Title != "Welcome back" {
		t.Errorf("the update of the metadata override must be stored: got %+v", got.MetadataOverride)
	}
	if !got.UpdatedAt.Equal(now) {
		t.Errorf("the update time must be stored: got %v, want %v", got.UpdatedAt, now)
	}
	if got.LatestVersion == nil || got.LatestVersion.ID != a.LatestVersion.ID {
		t.Errorf("an update must keep the audience's version pointers: got latest %+v, want %s", got.LatestVersion, a.LatestVersion.ID)
	}
}

func TestUpdateAudienceStoresNothingWhenFnFails(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	refused := errors.New("refused")
	_, err := f.store.UpdateAudience(f.ctx, tenantA, p.ID, a.ID, update(func(a *domain.Audience) error {
		a.CustomName = new("half done")
		return refused
	}))
	wantErr(t, err, refused, "UpdateAudience must return fn's error")
	if got := f.getAudience(a); got.CustomName != nil {
		t.Errorf("a failed update must store nothing: got custom name %q", *got.CustomName)
	}
}

func TestArchiveAudienceCancelsItsQueuedVersionsOnce(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	second := f.createVersion(a)
	now := f.tick(time.Second)

	archived, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, a.ID, now)
	if err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	if archived.Status != domain.StatusArchived || archived.ArchivedAt == nil || !archived.ArchivedAt.Equal(now) {
		t.Errorf("an archived audience must be archived at the given time: got status %s, archivedAt %v", archived.Status, archived.ArchivedAt)
	}
	if archived.LatestVersion == nil || archived.LatestVersion.ID != second.ID || archived.LatestVersion.Status != domain.StatusCancelled {
		t.Errorf("ArchiveAudience must return the audience with its latest version cancelled: got %+v", archived.LatestVersion)
	}
	for _, id := range []string{a.LatestVersion.ID, second.ID} {
		if v := f.version(tenantA, id); v.Status != domain.StatusCancelled || !sameTime(v.CancelledAt, &now) {
			t.Errorf("archiving an audience must cancel its queued version %s: got status %s, cancelledAt %v", id, v.Status, v.CancelledAt)
		}
	}
	processed := f.outboxRows(events.TypePageVersionProcessed)
	if len(processed) != 2 {
		t.Fatalf("each cancelled version must get its page.version.processed event: got %d events, want 2", len(processed))
	}
	for i, wantID := range []string{a.LatestVersion.ID, second.ID} {
		got := payload[domain.VersionProcessed](t, processed[i])
		if got.VersionID != wantID || got.Status != domain.StatusCancelled || got.VersionNumber != int64(i+1) {
			t.Errorf("cancellation event %d must announce version %d (%s) cancelled, in version order: got %+v", i, i+1, wantID, got)
		}
		if w := f.lastWriter("audience_versions", tenantA, wantID); processed[i].XID != w {
			t.Errorf("the cancellation event of %s must be written in the transaction that cancels it", wantID)
		}
	}

	again, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, a.ID, f.tick(time.Hour))
	if err != nil {
		t.Fatalf("archiving an archived audience must succeed (idempotent): %v", err)
	}
	if again.ArchivedAt == nil || !again.ArchivedAt.Equal(now) {
		t.Errorf("archiving again must keep the first archive time: got %v, want %v", again.ArchivedAt, now)
	}
	if n := len(f.outboxRows(events.TypePageVersionProcessed)); n != 2 {
		t.Errorf("archiving again must announce nothing new: got %d page.version.processed events, want 2", n)
	}
}

func TestCreateVersionNumbersVersionsAndMakesTheNewOneLatest(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID, func(a *domain.Audience) {
		a.PublishBehavior, a.SupplementaryContext = domain.BehaviorDraft, new("context of the audience")
	})
	in := f.newVersion(a, nil)
	in.IsNewPageAgent = false // the store takes these from the audience, not from the caller
	v, created, err := storeVersion(f.store, f.ctx, in)
	if err != nil || !created {
		t.Fatalf("create version: created %v, %v", created, err)
	}
	if v.VersionNumber != 2 || v.Status != domain.StatusQueued {
		t.Errorf("the second version of an audience must be number 2, queued: got number %d, status %s", v.VersionNumber, v.Status)
	}
	if v.PublishOnComplete || v.SupplementaryContext == nil || *v.SupplementaryContext != "context of the audience" || !v.IsNewPageAgent {
		t.Errorf("a version must take publish behaviour, supplementary context and agent kind from its audience: got publish %v, context %v, new agent %v",
			v.PublishOnComplete, v.SupplementaryContext, v.IsNewPageAgent)
	}
	got := f.getAudience(a)
	if got.LatestVersion == nil || got.LatestVersion.ID != v.ID || got.Status != domain.StatusQueued {
		t.Errorf("the new version must become the audience's latest: got latest %+v, status %s", got.LatestVersion, got.Status)
	}
	created2 := f.outboxRows(events.TypePageVersionCreated)
	if len(created2) != 2 || payload[domain.VersionCreated](t, created2[1]).VersionID != v.ID {
		t.Errorf("a new version must be announced with page.version.created: got %d events", len(created2))
	} else if w := f.lastWriter("audience_versions", tenantA, v.ID); created2[1].XID != w {
		t.Errorf("the new version's event must be written in the transaction that stores it")
	}
}

func TestCreateVersionWithAUsedOperationKeyReturnsTheFirstVersion(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	other := f.createAudience(tenantA, p.ID)
	pageB := f.createPage(tenantB)
	ofB := f.createAudience(tenantB, pageB.ID)
	key := new("op-1")

	first, created, err := storeVersion(f.store, f.ctx, f.newVersion(a, key))
	if err != nil || !created {
		t.Fatalf("the first use of an operation key must create a version: created %v, %v", created, err)
	}
	again, created, err := storeVersion(f.store, f.ctx, f.newVersion(a, key))
	if err != nil || created || again.ID != first.ID || again.VersionNumber != first.VersionNumber {
		t.Errorf("a repeated operation key must return the first version, not created: got %s (created %v), %v; want %s",
			again.ID, created, err, first.ID)
	}
	if n := f.count("SELECT count(*) FROM audience_versions WHERE tenant_id = $1 AND audience_id = $2", tenantA, a.ID); n != 2 {
		t.Errorf("a repeated operation key must not store a version: the audience has %d versions, want 2", n)
	}
	if n := len(f.outboxRows(events.TypePageVersionCreated)); n != 4 { // three audiences and one keyed version
		t.Errorf("a repeated operation key must announce nothing: got %d page.version.created events, want 4", n)
	}

	for _, c := range []struct {
		rule string
		aud  domain.Audience
	}{
		{"the same key on another audience of the tenant", other},
		{"the same key on an audience of another tenant", ofB},
	} {
		_, created, err := storeVersion(f.store, f.ctx, f.newVersion(c.aud, key))
		if err != nil || !created {
			t.Errorf("%s must create a version (keys are per audience): created %v, %v", c.rule, created, err)
		}
	}

	if _, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, a.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	replay, created, err := storeVersion(f.store, f.ctx, f.newVersion(a, key))
	if err != nil || created || replay.ID != first.ID {
		t.Errorf("replaying an operation key after the audience was archived must return the first version: got %s (created %v), %v",
			replay.ID, created, err)
	}
}

func TestConcurrentCreateVersionsWithOneOperationKeyCreateOneVersion(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	key := new("retried-request")
	const n = 8
	inputs := make([]domain.Version, n)
	for i := range inputs {
		inputs[i] = f.newVersion(a, key)
	}
	type result struct {
		v       domain.Version
		created bool
		err     error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, created, err := storeVersion(f.store, context.Background(), inputs[i])
			results[i] = result{v, created, err}
		}()
	}
	wg.Wait()
	createdCount, distinct := 0, map[string]bool{}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("a concurrent request with a used operation key must not fail: %v", r.err)
			continue
		}
		if r.created {
			createdCount++
		}
		distinct[r.v.ID] = true
	}
	if createdCount != 1 || len(distinct) != 1 {
		t.Errorf("concurrent requests with one operation key must create one version and all return it: %d created, %d distinct versions",
			createdCount, len(distinct))
	}
}

func TestCreateVersionRefusesAnArchivedAudienceOrPage(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	archivedAud := f.createAudience(tenantA, p.ID)
	if _, err := archiveAudience(f.store, f.ctx, tenantA, p.ID, archivedAud.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	archivedPage := f.createPage(tenantA)
	onArchivedPage := f.createAudience(tenantA, archivedPage.ID)
	f.archivePage(archivedPage)

	for _, c := range []struct {
		rule string
		aud  domain.Audience
		want error
	}{
		{"a version of an archived audience", archivedAud, domain.ErrAudienceArchived},
		{"a version of an audience of an archived page", onArchivedPage, domain.ErrPageArchived},
	} {
		before := f.count("SELECT count(*) FROM audience_versions")
		_, _, err := storeVersion(f.store, f.ctx, f.newVersion(c.aud, nil))
		wantErr(t, err, c.want, c.rule)
		if after := f.count("SELECT count(*) FROM audience_versions"); after != before {
			t.Errorf("%s must not be stored: %d versions before, %d after", c.rule, before, after)
		}
	}
}

func TestListVersionsWalksNewestFirstBelowTheCursor(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	for i := 0; i < 3; i++ {
		f.createVersion(a)
	}
	other := f.createAudience(tenantA, p.ID) // versions of another audience are not listed
	f.createVersion(other)

	for _, c := range []struct {
		rule  string
		below int64
		limit int
		want  []int64
	}{
		{"from the newest (cursor 0)", 0, 2, []int64{4, 3}},
		{"below version 3", 3, 2, []int64{2, 1}},
		{"below version 1 (nothing left)", 1, 2, nil},
		{"a limit above the count", 0, 10, []int64{4, 3, 2, 1}},
	} {
		list, total, err := f.store.ListVersions(f.ctx, tenantA, p.ID, a.ID, c.below, c.limit)
		if err != nil {
			t.Fatalf("%s: list versions: %v", c.rule, err)
		}
		var got []int64
		for _, v := range list {
			got = append(got, v.VersionNumber)
			if v.AudienceID != a.ID {
				t.Errorf("%s: the list holds version %s of audience %s", c.rule, v.ID, v.AudienceID)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: versions must be listed newest first below the cursor: got %v, want %v", c.rule, got, c.want)
		}
		if total != 4 {
			t.Errorf("%s: the count must be of all the audience's versions: got %d, want 4", c.rule, total)
		}
	}
}

func TestUpdateAudienceWritesOnlyTheAudienceItWasAskedFor(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	a := f.createAudience(tenantA, pageA.ID)
	sibling := f.createAudience(tenantA, pageA.ID)
	pageB := f.createPage(tenantB, func(p *domain.Page) { p.ID = pageA.ID })
	ofB := f.createAudience(tenantB, pageB.ID, func(b *domain.Audience) { b.ID = a.ID }) // same IDs in tenant B

	for _, c := range []struct {
		rule   string
		target domain.Audience
		move   func(*domain.Audience)
	}{
		{"an update of tenant A's audience must not write tenant B's audience, whatever fn does", ofB,
			func(x *domain.Audience) { x.TenantID = tenantB }},
		{"an update of an audience must not write another audience of the tenant, whatever fn does", sibling,
			func(x *domain.Audience) { x.ID = sibling.ID }},
	} {
		out, err := f.store.UpdateAudience(f.ctx, tenantA, pageA.ID, a.ID, update(func(x *domain.Audience) error {
			c.move(x)
			x.CustomName = new("written by the update of " + a.ID)
			return nil
		}))
		if err != nil {
			t.Fatalf("%s: update: %v", c.rule, err)
		}
		if out.ID != a.ID || out.TenantID != tenantA {
			t.Errorf("%s: UpdateAudience returned audience %s of %s, want %s of %s", c.rule, out.ID, out.TenantID, a.ID, tenantA)
		}
		if got := f.getAudience(c.target); got.CustomName != nil {
			t.Errorf("%s: the other audience's custom name became %q", c.rule, *got.CustomName)
		}
	}
}

// A create is a wait for the server per round trip: its reads go out together after the
// BEGIN, and its writes together before the COMMIT. Each round trip added here costs
// every create the server's and the service's work of one more exchange.
func TestCreatesSendTheirReadsTogetherAndTheirWritesTogether(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	store, trips := f.countedStore()
	key := "key-1"
	for _, tc := range []struct {
		name string
		run  func() error
		want int64
	}{
		{"a version", func() error { _, _, err := storeVersion(store, f.ctx, f.newVersion(a, nil)); return err }, 4},
		{"a version with an operation key", func() error { _, _, err := storeVersion(store, f.ctx, f.newVersion(a, &key)); return err }, 4},
		{"the operation key's version again", func() error { _, _, err := storeVersion(store, f.ctx, f.newVersion(a, &key)); return err }, 3},
		{"an audience with its first version", func() error {
			na, nv := newAudience(tenantA, p.ID, f.tick(time.Second))
			_, err := storeAudience(store, f.ctx, na, nv)
			return err
		}, 4},
	} {
		trips.Take()
		if err := tc.run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := trips.Take(); got != tc.want {
			t.Errorf("creating %s must take %d round trips (BEGIN, the reads together, the writes together if any, COMMIT): took %d", tc.name, tc.want, got)
		}
	}
}
