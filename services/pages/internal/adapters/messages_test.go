package adapters_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// proposal is a change a message proposes: a context field and its new value.
type proposal struct {
	Field, Value string
}

// newMessage is a message of the audience with its proposed changes, as the app's
// AddMessage makes it.
func (f *fixture) newMessage(a domain.Audience, content string, proposals ...proposal) domain.Message {
	now := f.tick(time.Second)
	m := domain.Message{ID: ids.New("message"), AudienceID: a.ID, Content: content, CreatedAt: now,
		Changes: make([]domain.ContextChange, len(proposals))}
	for i, p := range proposals {
		m.Changes[i] = domain.ContextChange{ID: ids.New("change"), MessageID: m.ID, Field: p.Field, NewValue: p.Value, CreatedAt: now}
	}
	return m
}

// addMessage stores a message of the audience with its proposed changes.
func (f *fixture) addMessage(a domain.Audience, content string, proposals ...proposal) domain.Message {
	f.t.Helper()
	m, err := f.store.AddMessage(f.ctx, a.TenantID, a.PageID, f.newMessage(a, content, proposals...), ids.New("conversation"))
	if err != nil {
		f.t.Fatalf("add message: %v", err)
	}
	return m
}

// messages reads an audience's conversation.
func (f *fixture) messages(a domain.Audience) domain.Messages {
	f.t.Helper()
	got, err := f.store.Messages(f.ctx, a.TenantID, a.PageID, a.ID)
	if err != nil {
		f.t.Fatalf("read messages of %s: %v", a.ID, err)
	}
	return got
}

// changeIDs lists the IDs of changes.
func changeIDs(cs []domain.ContextChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestAudienceWithoutMessagesHasAnEmptyConversation(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA, func(p *domain.Page) { p.PageContext = "we sell boats" })
	a := f.createAudience(tenantA, p.ID, func(a *domain.Audience) { a.SupplementaryContext = new("sailors") })
	got := f.messages(a)
	if got.Conversation != nil {
		t.Errorf("an audience without messages has no conversation: got %+v", got.Conversation)
	}
	if len(got.Messages) != 0 || got.PendingChanges == nil || len(got.PendingChanges) != 0 {
		t.Errorf("an audience without messages has no messages and an empty pending list: got %d messages, pending %v",
			len(got.Messages), got.PendingChanges)
	}
	want := domain.Context{AudienceID: a.ID, PageID: p.ID, CurrentSupplementaryContext: "sailors", PageContext: "we sell boats"}
	if got.Context != want {
		t.Errorf("the context must be the audience's current values and the page context: got %+v, want %+v", got.Context, want)
	}
}

func TestFirstMessageStartsTheConversationAndLaterOnesJoinIt(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	firstConversation := ids.New("conversation")
	first, err := f.store.AddMessage(f.ctx, tenantA, p.ID, f.newMessage(a, "hello"), firstConversation)
	if err != nil {
		t.Fatalf("add the first message: %v", err)
	}
	second, err := f.store.AddMessage(f.ctx, tenantA, p.ID, f.newMessage(a, "again"), ids.New("conversation"))
	if err != nil {
		t.Fatalf("add the second message: %v", err)
	}
	got := f.messages(a)
	if got.Conversation == nil || got.Conversation.ID != firstConversation || got.Conversation.AudienceID != a.ID {
		t.Fatalf("the first message must start the audience's conversation %s: got %+v", firstConversation, got.Conversation)
	}
	if !got.Conversation.UpdatedAt.Equal(second.CreatedAt) || !got.Conversation.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("the conversation must be created with the first message and updated with the last: got created %v updated %v, want %v and %v",
			got.Conversation.CreatedAt, got.Conversation.UpdatedAt, first.CreatedAt, second.CreatedAt)
	}
	if n := f.count("SELECT count(*) FROM audience_conversations"); n != 1 {
		t.Errorf("an audience has one conversation: got %d", n)
	}
	if len(got.Messages) != 2 || got.Messages[0].ID != first.ID || got.Messages[1].ID != second.ID {
		t.Fatalf("the messages must be read oldest first: got %+v", got.Messages)
	}
	if m := got.Messages[0]; m.Content != "hello" || m.AudienceID != a.ID || m.HasSnapshot || m.IsInterrupted ||
		m.Changes == nil || len(m.Changes) != 0 {
		t.Errorf("a message must read back as added, with an empty change list: got %+v", m)
	}
}

func TestChangesTakeTheirPreviousValueFromThePendingChangeOrTheContext(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA, func(p *domain.Page) {
		p.Metadata = &domain.Metadata{Title: new("Page title"), Keywords: []string{"boats", "sails"}}
	})
	a := f.createAudience(tenantA, p.ID, func(a *domain.Audience) {
		a.SupplementaryContext = new("old context")
		a.MetadataOverride = &domain.Metadata{Description: new("audience description")}
	})
	first := f.addMessage(a, "first",
		proposal{domain.FieldSupplementaryContext, "context 1"},
		proposal{domain.FieldMetaTitle, "title 1"},
		proposal{domain.FieldSupplementaryContext, "context 1b"})
	second := f.addMessage(a, "second",
		proposal{domain.FieldSupplementaryContext, "context 2"},
		proposal{domain.FieldMetaDescription, "description 2"},
		proposal{domain.FieldMetaKeywords, "yachts"})

	cases := []struct {
		rule   string
		change domain.ContextChange
		want   string
	}{
		{"a field without pending change starts from the audience's value", first.Changes[0], "old context"},
		{"a metadata field starts from the page's metadata when the audience does not override it", first.Changes[1], "Page title"},
		{"a field changed earlier in the same message starts from that change", first.Changes[2], "context 1"},
		{"a field with a pending change of an earlier message starts from it", second.Changes[0], "context 1b"},
		{"a metadata field the audience overrides starts from the override", second.Changes[1], "audience description"},
		{"keywords start from the effective keywords, comma-separated", second.Changes[2], "boats, sails"},
	}
	for _, c := range cases {
		if c.change.PreviousValue != c.want {
			t.Errorf("%s: AddMessage returned previous value %q, want %q", c.rule, c.change.PreviousValue, c.want)
		}
	}

	stored := f.messages(a)
	byID := map[string]domain.ContextChange{}
	for _, m := range stored.Messages {
		for _, c := range m.Changes {
			byID[c.ID] = c
		}
	}
	for _, c := range cases {
		if got := byID[c.change.ID]; got.PreviousValue != c.want || got.NewValue != c.change.NewValue || got.Field != c.change.Field {
			t.Errorf("%s: stored change %+v, want field %s from %q to %q", c.rule, got, c.change.Field, c.want, c.change.NewValue)
		}
	}
}

func TestMessagesReadGroupsChangesByMessageAndListsThePendingOnes(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	other := f.createAudience(tenantA, p.ID)
	first := f.addMessage(a, "first",
		proposal{domain.FieldMetaTitle, "t1"},
		proposal{domain.FieldMetaDescription, "d1"})
	f.addMessage(other, "of another audience", proposal{domain.FieldMetaTitle, "other"})
	second := f.addMessage(a, "second", proposal{domain.FieldSupplementaryContext, "c2"})

	got := f.messages(a)
	if len(got.Messages) != 2 {
		t.Fatalf("only the audience's own messages are read: got %d, want 2", len(got.Messages))
	}
	for i, want := range []domain.Message{first, second} {
		if g, w := changeIDs(got.Messages[i].Changes), changeIDs(want.Changes); !slices.Equal(g, w) {
			t.Errorf("message %d must carry its own changes in the order proposed: got %v, want %v", i, g, w)
		}
	}
	wantPending := append(changeIDs(first.Changes), changeIDs(second.Changes)...)
	if g := changeIDs(got.PendingChanges); !slices.Equal(g, wantPending) {
		t.Errorf("every unapplied change of the audience must be pending, in message order: got %v, want %v", g, wantPending)
	}
	for _, c := range got.PendingChanges {
		if c.Applied {
			t.Errorf("a pending change must not be applied: %+v", c)
		}
	}
}

func TestMessagesOfOneTenantAreInvisibleToAnother(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	audA := f.createAudience(tenantA, pageA.ID)
	f.addMessage(audA, "tenant A's secret", proposal{domain.FieldMetaTitle, "A"})
	pageB := f.createPage(tenantB)

	for _, c := range []struct {
		where  string
		pageID string
		want   error
	}{
		{"on tenant A's page", pageA.ID, domain.ErrPageNotFound},
		{"on tenant B's own page", pageB.ID, domain.ErrAudienceNotFound},
	} {
		got, err := f.store.Messages(f.ctx, tenantB, c.pageID, audA.ID)
		wantErr(t, err, c.want, "tenant B read tenant A's messages "+c.where)
		if len(got.Messages) != 0 {
			t.Errorf("tenant B was handed %d of tenant A's messages %s", len(got.Messages), c.where)
		}
		m := f.newMessage(audA, "tenant B's injection", proposal{domain.FieldMetaTitle, "B"})
		_, err = f.store.AddMessage(f.ctx, tenantB, c.pageID, m, ids.New("conversation"))
		wantErr(t, err, c.want, "tenant B added a message to tenant A's audience "+c.where)
	}
	if n := f.count("SELECT count(*) FROM audience_messages"); n != 1 {
		t.Errorf("tenant B's refused messages must not be stored: %d messages, want tenant A's 1", n)
	}
	if n := f.count("SELECT count(*) FROM audience_conversations WHERE tenant_id = $1", tenantB); n != 0 {
		t.Errorf("tenant B's refused messages must not start a conversation: %d conversations of tenant B", n)
	}
	if got := f.messages(audA); len(got.Messages) != 1 || len(got.PendingChanges) != 1 {
		t.Errorf("tenant A's conversation must be untouched by tenant B: got %d messages, %d pending", len(got.Messages), len(got.PendingChanges))
	}
}

func TestMessagesOfAnAudienceOutOfReachAreRefused(t *testing.T) {
	f := newFixture(t)
	r := f.reach(t)
	p, other, a, archived, gone, ofGone := r.page, r.other, r.audience, r.archived, r.gone, r.ofGone

	for _, c := range []struct {
		rule       string
		aud        domain.Audience
		pageID     string
		readErr    error // nil: the conversation can be read
		messageErr error
	}{
		{"an archived audience keeps its conversation but takes no message", archived, p.ID, nil, domain.ErrAudienceArchived},
		{"an audience named under another page", a, other.ID, domain.ErrAudienceNotFound, domain.ErrAudienceNotFound},
		{"an audience of a deleted page", ofGone, gone.ID, domain.ErrPageNotFound, domain.ErrPageNotFound},
		{"an audience never created", domain.Audience{ID: ids.New("audience")}, p.ID, domain.ErrAudienceNotFound, domain.ErrAudienceNotFound},
	} {
		_, err := f.store.Messages(f.ctx, tenantA, c.pageID, c.aud.ID)
		if c.readErr == nil && err != nil {
			t.Errorf("%s: reading its messages failed: %v", c.rule, err)
		} else if c.readErr != nil {
			wantErr(t, err, c.readErr, c.rule+": reading its messages")
		}
		_, err = f.store.AddMessage(f.ctx, tenantA, c.pageID, f.newMessage(c.aud, "hello", proposal{domain.FieldMetaTitle, "x"}),
			ids.New("conversation"))
		wantErr(t, err, c.messageErr, c.rule+": adding a message")
	}
	if n := f.count("SELECT count(*) FROM audience_messages") + f.count("SELECT count(*) FROM audience_changes") +
		f.count("SELECT count(*) FROM audience_conversations"); n != 0 {
		t.Errorf("refused messages must store nothing: %d rows of messages, changes and conversations", n)
	}
}

func TestMessageIsStoredWithAllItsChangesOrNotAtAll(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	m := f.newMessage(a, "two changes, one ID", proposal{domain.FieldMetaTitle, "t"}, proposal{domain.FieldMetaDescription, "d"})
	m.Changes[1].ID = m.Changes[0].ID // the second change cannot be stored
	if _, err := f.store.AddMessage(f.ctx, tenantA, p.ID, m, ids.New("conversation")); err == nil {
		t.Fatal("a message whose change cannot be stored must fail")
	}
	if n := f.count("SELECT count(*) FROM audience_messages") + f.count("SELECT count(*) FROM audience_changes") +
		f.count("SELECT count(*) FROM audience_conversations"); n != 0 {
		t.Errorf("a failed message must leave no message, change or conversation behind: %d rows", n)
	}
}

func TestOneAudienceIDInTwoTenantsHasTwoConversations(t *testing.T) {
	f := newFixture(t)
	pageA := f.createPage(tenantA)
	audA := f.createAudience(tenantA, pageA.ID)
	// Tenant B has a page and an audience with the same IDs as tenant A's.
	pageB := f.createPage(tenantB, func(p *domain.Page) { p.ID = pageA.ID })
	audB := f.createAudience(tenantB, pageB.ID, func(a *domain.Audience) { a.ID = audA.ID })
	f.process(audA.LatestVersion.ID) // out of the queue's way: tenant B's version is processed below
	msgA := f.addMessage(audA, "tenant A's", proposal{domain.FieldMetaTitle, "A's title"})

	if got := f.messages(audB); got.Conversation != nil || len(got.Messages) != 0 || len(got.PendingChanges) != 0 {
		t.Errorf("tenant B's audience must not show tenant A's conversation of the same audience ID: got conversation %+v, %d messages, %d pending",
			got.Conversation, len(got.Messages), len(got.PendingChanges))
	}
	msgB := f.addMessage(audB, "tenant B's", proposal{domain.FieldMetaTitle, "B's title"})
	if prev := msgB.Changes[0].PreviousValue; prev != "" {
		t.Errorf("tenant B's change must start from tenant B's context, not from tenant A's pending change: got previous value %q", prev)
	}

	// Tenant B's version applies tenant B's changes only.
	f.process(audB.LatestVersion.ID)
	gotA := f.messages(audA)
	if len(gotA.Messages) != 1 || gotA.Messages[0].ID != msgA.ID || gotA.Messages[0].HasSnapshot {
		t.Errorf("processing tenant B's version must leave tenant A's messages alone: got %+v", gotA.Messages)
	}
	if g, w := changeIDs(gotA.PendingChanges), changeIDs(msgA.Changes); !slices.Equal(g, w) {
		t.Errorf("processing tenant B's version must not apply tenant A's changes: pending %v, want %v", g, w)
	}
	if gotA.Conversation == nil || gotA.Conversation.PublishedMessageID != nil {
		t.Errorf("publishing tenant B's version must not mark tenant A's conversation: got %+v", gotA.Conversation)
	}
	if a := f.getAudience(audA); a.MetadataOverride != nil {
		t.Errorf("tenant B's version must not change tenant A's audience: got override %+v", a.MetadataOverride)
	}
	if b := f.getAudience(audB); b.MetadataOverride == nil || b.MetadataOverride.Title == nil || *b.MetadataOverride.Title != "B's title" {
		t.Errorf("tenant B's version must apply tenant B's change: got override %+v", b.MetadataOverride)
	}
}

// An audience holds at most domain.MaxMessagesPerAudience messages: one more is refused,
// so its messages read cannot grow without bound.
func TestAudienceMessagesAreCapped(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	for i := 0; i < domain.MaxMessagesPerAudience; i++ {
		f.addMessage(a, "m", proposal{domain.FieldMetaTitle, "t"})
	}
	_, err := f.store.AddMessage(f.ctx, a.TenantID, a.PageID, f.newMessage(a, "one too many"), ids.New("conversation"))
	if !errors.Is(err, domain.ErrTooManyMessages) {
		t.Fatalf("message %d of an audience must be refused with ErrTooManyMessages (the cap is %d); got %v",
			domain.MaxMessagesPerAudience+1, domain.MaxMessagesPerAudience, err)
	}
	if got := f.messages(a); len(got.Messages) != domain.MaxMessagesPerAudience {
		t.Fatalf("the refused message must not be stored: %d messages, want %d", len(got.Messages), domain.MaxMessagesPerAudience)
	}
}

// The messages read holds the newest messages whose text (content and change values)
// fits in domain.MaxMessagesReadBytes, at least one, oldest first, and counts the older
// ones it leaves out; the pending changes are those of the messages it holds.
func TestMessagesReadIsBoundedByBytes(t *testing.T) {
	f := newFixture(t)
	p := f.createPage(tenantA)
	a := f.createAudience(tenantA, p.ID)
	big := strings.Repeat("<", 200_000)
	var added []domain.Message
	for i := 0; i < 5; i++ {
		added = append(added, f.addMessage(a, big, proposal{domain.FieldSupplementaryContext, big[:50_000]}))
	}
	got := f.messages(a)
	// Each message holds 200 kB of content and 50 kB of newValue, and from the second on
	// 50 kB of previousValue, its change counted twice (listed again as pending): 400 kB
	// a message, so the newest two fit in 1 MiB, a third would not.
	if len(got.Messages) != 2 || got.Omitted != 3 {
		t.Fatalf("a read of five messages of 400 kB as counted must hold the newest two (budget %d bytes) and count three omitted; got %d and %d",
			domain.MaxMessagesReadBytes, len(got.Messages), got.Omitted)
	}
	if got.Messages[0].ID != added[3].ID || got.Messages[1].ID != added[4].ID {
		t.Fatalf("the messages held must be the newest, oldest first: got %s, %s; want %s, %s",
			got.Messages[0].ID, got.Messages[1].ID, added[3].ID, added[4].ID)
	}
	want := append(changeIDs(added[3].Changes), changeIDs(added[4].Changes)...)
	if g := changeIDs(got.PendingChanges); !slices.Equal(g, want) {
		t.Fatalf("the pending changes must be those of the messages held, not repeated for every message: got %v, want %v", g, want)
	}
	// Text is counted as the answer writes it: 100 kB of control characters take 600 kB
	// (each \u0001), so of two such messages only the newest fits.
	control := f.createAudience(tenantA, p.ID)
	for range 2 {
		f.addMessage(control, strings.Repeat("\x01", 100_000))
	}
	if got := f.messages(control); len(got.Messages) != 1 || got.Omitted != 1 {
		t.Fatalf("two messages of 100 kB of control characters (600 kB each in JSON) must read as the newest one and one omitted; got %d and %d",
			len(got.Messages), got.Omitted)
	}
	one := f.createAudience(tenantA, p.ID)
	huge := strings.Repeat("x", 2<<20)
	f.addMessage(one, huge)
	if got := f.messages(one); len(got.Messages) != 1 || got.Omitted != 0 {
		t.Fatalf("a message larger than the budget alone must still be read; got %d messages, %d omitted", len(got.Messages), got.Omitted)
	}
}
