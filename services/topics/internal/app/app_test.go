package app

import (
	"context"
	"testing"
	"time"

	"github.com/customerapi/platform/services/topics/internal/domain"
)

// memory is a Repository that keeps one topic and one entry and records the events it
// was asked to store.
type memory struct {
	domain.Repository // the reads are not used here
	topic             domain.Topic
	entry             domain.Entry
	stored            []domain.Event
}

func (m *memory) CreateTopic(_ context.Context, t domain.Topic, evt domain.Event) error {
	m.topic, m.stored = t, append(m.stored, evt)
	return nil
}

func (m *memory) UpdateTopic(_ context.Context, _, _ string, change domain.Change[domain.Topic]) (domain.Topic, error) {
	t := m.topic
	if evt, changed, err := change(&t); err != nil {
		return m.topic, err
	} else if changed {
		m.topic, m.stored = t, append(m.stored, evt)
	}
	return m.topic, nil
}

func (m *memory) DeleteTopic(_ context.Context, _, _ string, evt domain.Event) error {
	m.stored = append(m.stored, evt)
	return nil
}

func (m *memory) AddEntry(_ context.Context, _ string, e domain.Entry, evt domain.Event) error {
	m.entry, m.stored = e, append(m.stored, evt)
	return nil
}

func (m *memory) UpdateEntry(_ context.Context, _, _, _ string, change domain.Change[domain.Entry]) (domain.Entry, error) {
	e := m.entry
	if evt, changed, err := change(&e); err != nil {
		return m.entry, err
	} else if changed {
		m.entry, m.stored = e, append(m.stored, evt)
	}
	return m.entry, nil
}

func (m *memory) DeleteEntry(_ context.Context, _, _, _ string, evt domain.Event) error {
	m.stored = append(m.stored, evt)
	return nil
}

// TestEachChangeAnnouncesItsEvent: the use cases decide which event a change stores,
// with the record as it is after the change, and a change that changes nothing stores
// none.
func TestEachChangeAnnouncesItsEvent(t *testing.T) {
	ctx := context.Background()
	m := &memory{}
	s := &Service{Repo: m, Clock: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	topic, _ := s.CreateTopic(ctx, "tnt_a", NewTopic{Title: "Before", SortOrder: 1})
	_, _ = s.UpdateTopic(ctx, "tnt_a", topic.ID, domain.TopicPatch{Title: new("After")})
	_, _ = s.UpdateTopic(ctx, "tnt_a", topic.ID, domain.TopicPatch{Title: new("After")}) // no change
	entry, _ := s.AddEntry(ctx, "tnt_a", topic.ID, NewEntry{Content: domain.Content{Type: "text", Text: "x"}, SortOrder: 1})
	_, _ = s.UpdateEntry(ctx, "tnt_a", topic.ID, entry.ID, domain.EntryPatch{SortOrder: new(int64(5))})
	_, _ = s.UpdateEntry(ctx, "tnt_a", topic.ID, entry.ID, domain.EntryPatch{SortOrder: new(int64(5))}) // no change
	_ = s.DeleteEntry(ctx, "tnt_a", topic.ID, entry.ID)
	_ = s.DeleteTopic(ctx, "tnt_a", topic.ID)

	want := []struct {
		typ, subject string
		check        func(payload any) bool
	}{
		{domain.EventTopicCreated, topic.ID, func(p any) bool { return p.(domain.TopicEvent).Title == "Before" }},
		{domain.EventTopicUpdated, topic.ID, func(p any) bool { return p.(domain.TopicEvent).Title == "After" }},
		{domain.EventEntryCreated, topic.ID, func(p any) bool { return p.(domain.EntryEvent).TopicEntryID == entry.ID }},
		{domain.EventEntryUpdated, topic.ID, func(p any) bool { return p.(domain.EntryEvent).SortOrder == 5 }},
		{domain.EventEntryDeleted, topic.ID, func(p any) bool { return p.(domain.EntryEvent).TopicEntryID == entry.ID }},
		{domain.EventTopicDeleted, topic.ID, func(p any) bool { return p.(domain.TopicEvent).TopicID == topic.ID }},
	}
	if len(m.stored) != len(want) {
		t.Fatalf("%d events stored, want %d (a change that changes nothing announces nothing): %+v", len(m.stored), len(want), m.stored)
	}
	for i, w := range want {
		got := m.stored[i]
		if got.Type != w.typ || got.Subject != w.subject {
			t.Errorf("event %d is %s about %s, want %s about %s", i, got.Type, got.Subject, w.typ, w.subject)
			continue
		}
		if !w.check(got.Payload) {
			t.Errorf("event %d (%s) does not describe the record after the change: %+v", i, got.Type, got.Payload)
		}
	}
}
