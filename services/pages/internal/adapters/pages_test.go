package adapters_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// fullPage is a page with every field set, the JSON lists and the metadata included.
func fullPage(tenantID string, now time.Time) domain.Page {
	archived := now.Add(time.Minute)
	p := newPage(tenantID, now)
	p.Name, p.Title, p.PageContext, p.BrandID, p.PageType = "pricing", "Our prices", "B2B SaaS", "brand_1", "sales_deck"
	p.Status, p.Flags, p.AudiencesCount = domain.PageArchived, []string{domain.FlagHomePage}, 0
	p.Actions = []domain.Action{
		{ActionID: "buy", ActionIndex: 0, Purpose: "convert", ButtonTitle: "Buy", ActionType: "link", URL: "https://example.com/buy"},
		{ActionID: "demo", ActionIndex: 1.5, Purpose: "meet", ButtonTitle: "Book a demo", ActionType: "form", URL: "https://example.com/demo"},
	}
	p.ActionCardWidgets = []domain.ActionCardWidget{{Type: "logos", Title: "Trusted by", Logos: []domain.Logo{
		{Image: domain.Image{AltText: "Acme", URL: "https://example.com/acme.png", FileID: "file_1", AssetID: "asset_1"}}}}}
	p.FooterLinks = []domain.FooterLink{{ID: "f1", Title: "Company", Links: []domain.Link{{ID: "l1", Text: "About", URL: "/about"}}}}
	p.NavLinks = []domain.NavLink{{ID: "n1", Text: "Docs", URL: "/docs", Type: "internal"}}
	p.Scripts = []domain.Script{{Name: "analytics", Description: "counts visits", Content: "console.log(1)", Enabled: true}}
	p.HeaderActionID = new("demo")
	p.Metadata = &domain.Metadata{Title: new("Prices"), Keywords: []string{"saas", "pricing"}, OgImageURL: new("https://example.com/og.png")}
	p.UpdatedAt, p.ArchivedAt = now.Add(time.Minute), &archived
	return p
}

// pageJSON renders a page with its times in UTC, for comparing whole pages.
func pageJSON(t *testing.T, p domain.Page) string {
	t.Helper()
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.ArchivedAt, p.DeletedAt = utc(p.ArchivedAt), utc(p.DeletedAt)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCreatedPageReadsBackWithEveryField(t *testing.T) {
	f := newFixture(t)
	want := fullPage(tenantA, start)
	if err := f.store.CreatePage(f.ctx, want); err != nil {
		t.Fatalf("create page: %v", err)
	}
	got, err := f.store.GetPage(f.ctx, tenantA, want.ID)
	if err != nil {
		t.Fatalf("get the page just created: %v", err)
	}
	if g, w := pageJSON(t, got), pageJSON(t, want); g != w {
		t.Errorf("a stored page must read back as it was created:\n got %s\nwant %s", g, w)
	}
}

func TestPageWithoutListsReadsBackWithEmptyListsAndNoMetadata(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA) // no actions, widgets, links, scripts, metadata or header action
	got, err := f.store.GetPage(f.ctx, tenantA, p.ID)
	if err != nil {
		t.Fatalf("get page: %v", err)
	}
	lists := []struct {
		name string
		n    int
		nil  bool
	}{
		{"actions", len(got.Actions), got.Actions == nil},
		{"actionCardWidgets", len(got.ActionCardWidgets), got.ActionCardWidgets == nil},
		{"footerLinks", len(got.FooterLinks), got.FooterLinks == nil},
		{"navLinks", len(got.NavLinks), got.NavLinks == nil},
		{"scripts", len(got.Scripts), got.Scripts == nil},
	}
	for _, l := range lists {
		if l.n != 0 || l.nil {
			t.Errorf("a page created without %s must read back with an empty list: got %d items (nil: %v)", l.name, l.n, l.nil)
		}
	}
	if got.Metadata != nil || got.HeaderActionID != nil {
		t.Errorf("a page created without metadata or header action must read back without them: got metadata %+v, header action %v",
			got.Metadata, got.HeaderActionID)
	}
}

func TestGetPageOfUnknownIDIsPageNotFound(t *testing.T) {
	f := newFixture(t)
	f.createPage(tenantA)
	_, err := f.store.GetPage(f.ctx, tenantA, ids.New("page"))
	wantErr(t, err, domain.ErrPageNotFound, "reading a page that was never created")
	_, err = f.store.UpdatePage(f.ctx, tenantA, ids.New("page"), true, update(func(*domain.Page) error {
		t.Error("updating a page that was never created must not call fn")
		return nil
	}))
	wantErr(t, err, domain.ErrPageNotFound, "updating a page that was never created")
}

func TestPagesOfOneTenantAreInvisibleToAnother(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	f.createPage(tenantB) // tenant B has pages of its own

	_, err := f.store.GetPage(f.ctx, tenantB, pageA.ID)
	wantErr(t, err, domain.ErrPageNotFound, "tenant B read tenant A's page")

	for _, withDeleted := range []bool{false, true} {
		_, err = f.store.UpdatePage(f.ctx, tenantB, pageA.ID, withDeleted, update(func(p *domain.Page) error {
			t.Errorf("tenant B's update (withDeleted %v) was handed tenant A's page", withDeleted)
			p.Name = "taken over"
			return nil
		}))
		wantErr(t, err, domain.ErrPageNotFound, "tenant B updated tenant A's page")
	}

	list, total, err := f.store.ListPages(f.ctx, tenantB, "", 100)
	if err != nil {
		t.Fatalf("list tenant B's pages: %v", err)
	}
	for _, p := range list {
		if p.ID == pageA.ID || p.TenantID != tenantB {
			t.Errorf("tenant B's page list holds page %s of tenant %s", p.ID, p.TenantID)
		}
	}
	if total != 1 {
		t.Errorf("tenant B's page count must count only its own page: got %d, want 1", total)
	}

	wantErr(t, adapters.CheckPage(f.ctx, f.pool, tenantB, pageA.ID), domain.ErrPageNotFound,
		"the existence check found tenant A's page for tenant B")

	if got, err := f.store.GetPage(f.ctx, tenantA, pageA.ID); err != nil || got.Name != pageA.Name {
		t.Errorf("tenant A's page must be untouched by tenant B: got name %q, %v; want %q", got.Name, err, pageA.Name)
	}
}

func TestOnePageIDInTwoTenantsIsTwoPages(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	pageB := f.createPage(tenantB, func(p *domain.Page) { p.ID, p.Name = pageA.ID, "tenant B's" })

	f.changePage(pageB, false, func(p *domain.Page) { p.Title = "changed by B" })
	now := f.tick(time.Second)
	f.changePage(pageB, false, func(p *domain.Page) { p.DeletedAt = &now })

	got, err := f.store.GetPage(f.ctx, tenantA, pageA.ID)
	if err != nil {
		t.Fatalf("tenant B deleting its page of the same ID hid tenant A's page: %v", err)
	}
	if got.Name != pageA.Name || got.Title != pageA.Title {
		t.Errorf("tenant B's update of its page changed tenant A's page of the same ID: got %q/%q, want %q/%q",
			got.Name, got.Title, pageA.Name, pageA.Title)
	}
}

func TestDeletedPageIsNotFoundButCanBeRestored(t *testing.T) {
	f := newFixture(t)
	kept := f.createPage(tenantA)
	deleted := f.createPage(tenantA)
	f.deletePage(deleted)

	_, err := f.store.GetPage(f.ctx, tenantA, deleted.ID)
	wantErr(t, err, domain.ErrPageNotFound, "reading a deleted page")
	_, err = f.store.UpdatePage(f.ctx, tenantA, deleted.ID, false, update(func(*domain.Page) error {
		t.Error("an update without withDeleted was handed a deleted page")
		return nil
	}))
	wantErr(t, err, domain.ErrPageNotFound, "updating a deleted page without withDeleted")
	wantErr(t, adapters.CheckPage(f.ctx, f.pool, tenantA, deleted.ID), domain.ErrPageNotFound, "the existence check of a deleted page")

	list, total, err := f.store.ListPages(f.ctx, tenantA, "", 100)
	if err != nil {
		t.Fatalf("list pages: %v", err)
	}
	if len(list) != 1 || list[0].ID != kept.ID || total != 1 {
		t.Errorf("the page list must leave out deleted pages: got %d pages (total %d), want only %s", len(list), total, kept.ID)
	}

	now := f.tick(time.Second)
	restored, err := f.store.UpdatePage(f.ctx, tenantA, deleted.ID, true, update(func(p *domain.Page) error { return p.Restore(now) }))
	if err != nil {
		t.Fatalf("restore (withDeleted) must find the deleted page: %v", err)
	}
	if restored.DeletedAt != nil || restored.Status != domain.PageDraft {
		t.Errorf("a restored page must come back as an undeleted draft: got status %s, deletedAt %v", restored.Status, restored.DeletedAt)
	}
	if _, err := f.store.GetPage(f.ctx, tenantA, deleted.ID); err != nil {
		t.Errorf("a restored page must be readable again: %v", err)
	}
}

func TestListPagesWalksTheTenantsPagesInIDOrder(t *testing.T) {
	f := newFixture(t)
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, f.createPage(tenantA).ID)
		f.createPage(tenantB) // interleaved pages of another tenant
	}
	var got []string
	after := ""
	for calls := 0; calls < 10; calls++ {
		list, total, err := f.store.ListPages(f.ctx, tenantA, after, 2)
		if err != nil {
			t.Fatalf("list pages after %q: %v", after, err)
		}
		if total != 5 {
			t.Errorf("every page of the list must carry the count of all the tenant's visible pages: got %d, want 5", total)
		}
		if len(list) > 2 {
			t.Errorf("a page of the list must hold at most limit pages: got %d, want at most 2", len(list))
		}
		if len(list) == 0 {
			break
		}
		for _, p := range list {
			got = append(got, p.ID)
		}
		after = list[len(list)-1].ID
	}
	if len(got) != len(want) {
		t.Fatalf("walking the list with the last ID as cursor must visit every page once: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the list must be in ID (creation) order: got %v, want %v", got, want)
		}
	}
}

func TestUpdatePageStoresWhatFnChanged(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	want := fullPage(tenantA, start)
	want.ID, want.CreatedAt = p.ID, p.CreatedAt
	want.UpdatedAt = f.tick(time.Second)
	want.DeletedAt = nil
	returned, err := f.store.UpdatePage(f.ctx, tenantA, p.ID, false, update(func(got *domain.Page) error {
		*got = want
		return nil
	}))
	if err != nil {
		t.Fatalf("update page: %v", err)
	}
	stored, err := f.store.GetPage(f.ctx, tenantA, p.ID)
	if err != nil {
		t.Fatalf("get the updated page: %v", err)
	}
	if g, w := pageJSON(t, stored), pageJSON(t, want); g != w {
		t.Errorf("the stored page must be what fn left:\n got %s\nwant %s", g, w)
	}
	if g, w := pageJSON(t, returned), pageJSON(t, want); g != w {
		t.Errorf("UpdatePage must return the page it stored:\n got %s\nwant %s", g, w)
	}
}

func TestUpdatePageNeverChangesTheAudienceCountOrCreationTime(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	f.createAudience(tenantA, p.ID)
	f.changePage(p, false, func(p *domain.Page) {
		p.AudiencesCount, p.CreatedAt, p.Name = 42, start.Add(-time.Hour), "renamed"
	})
	got, err := f.store.GetPage(f.ctx, tenantA, p.ID)
	if err != nil {
		t.Fatalf("get page: %v", err)
	}
	if got.Name != "renamed" {
		t.Errorf("the update must be stored: got name %q, want %q", got.Name, "renamed")
	}
	if got.AudiencesCount != 1 {
		t.Errorf("only CreateAudience counts audiences, an update must not: got count %d, want 1", got.AudiencesCount)
	}
	if !got.CreatedAt.Equal(p.CreatedAt) {
		t.Errorf("an update must not change the creation time: got %v, want %v", got.CreatedAt, p.CreatedAt)
	}
}

func TestUpdatePageStoresNothingWhenFnFails(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	f.archivePage(p)
	_, err := f.store.UpdatePage(f.ctx, tenantA, p.ID, false, update(func(p *domain.Page) error {
		p.Name = "half done"
		return p.Publish(f.now) // an archived page cannot be published
	}))
	if !errors.Is(err, domain.ErrPageArchived) {
		t.Errorf("UpdatePage must return fn's error: got %v, want %v", err, domain.ErrPageArchived)
	}
	got, err := f.store.GetPage(f.ctx, tenantA, p.ID)
	if err != nil {
		t.Fatalf("get page: %v", err)
	}
	if got.Name != p.Name || got.Status != domain.PageArchived {
		t.Errorf("a failed update must store nothing: got name %q status %s, want %q %s", got.Name, got.Status, p.Name, domain.PageArchived)
	}
}

func TestUpdatePageWritesOnlyThePageItWasAskedFor(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	sibling := f.createPage(tenantA)
	ofB := f.createPage(tenantB, func(b *domain.Page) { b.ID = p.ID }) // tenant B's page of the same ID

	for _, c := range []struct {
		rule   string
		target domain.Page
		move   func(*domain.Page)
	}{
		{"an update of tenant A's page must not write tenant B's page, whatever fn does", ofB,
			func(p *domain.Page) { p.TenantID = tenantB }},
		{"an update of a page must not write another page of the tenant, whatever fn does", sibling,
			func(p *domain.Page) { p.ID = sibling.ID }},
	} {
		out, err := f.store.UpdatePage(f.ctx, tenantA, p.ID, false, update(func(p *domain.Page) error {
			c.move(p)
			p.Name = "written by the update of " + p.ID
			return nil
		}))
		if err != nil {
			t.Fatalf("%s: update: %v", c.rule, err)
		}
		if out.ID != p.ID || out.TenantID != tenantA {
			t.Errorf("%s: UpdatePage returned page %s of %s, want %s of %s", c.rule, out.ID, out.TenantID, p.ID, tenantA)
		}
		got, err := f.store.GetPage(f.ctx, c.target.TenantID, c.target.ID)
		if err != nil {
			t.Fatalf("%s: read the other page: %v", c.rule, err)
		}
		if got.Name != c.target.Name {
			t.Errorf("%s: the other page's name became %q, want %q", c.rule, got.Name, c.target.Name)
		}
	}
}
