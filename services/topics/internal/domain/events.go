package domain

import "github.com/customerapi/platform/libs/events"

// Internal event types of the topics context (not delivered to webhooks).
const (
	EventTopicCreated = "topic.created"
	EventTopicUpdated = "topic.updated"
	EventTopicDeleted = "topic.deleted"
	EventEntryCreated = "topic.entry.created"
	EventEntryUpdated = "topic.entry.updated"
	EventEntryDeleted = "topic.entry.deleted"
)

// TopicEvent is the payload of topic.* events.
type TopicEvent struct {
	TopicID   string  `json:"topicId"`
	Title     string  `json:"title,omitempty"`
	Purpose   *string `json:"purpose,omitempty"`
	SortOrder int64   `json:"sortOrder"`
	IsDefault bool    `json:"isDefault"`
}

// EntryEvent is the payload of topic.entry.* events.
type EntryEvent struct {
	TopicID      string `json:"topicId"`
	TopicEntryID string `json:"topicEntryId"`
	SortOrder    int64  `json:"sortOrder"`
	ContentType  string `json:"contentType,omitempty"`
}

// NewTopicEvent describes t for an event.
func NewTopicEvent(t Topic) TopicEvent {
	return TopicEvent{TopicID: t.ID, Title: t.Title, Purpose: t.Purpose, SortOrder: t.SortOrder, IsDefault: t.IsDefault}
}

// NewEntryEvent describes e for an event.
func NewEntryEvent(e Entry) EntryEvent {
	return EntryEvent{TopicID: e.TopicID, TopicEntryID: e.ID, SortOrder: e.SortOrder, ContentType: e.Content.Type}
}

// Event is what a change announces (the platform's events.Announcement).
type Event = events.Announcement

// Change is the update callback of every service (events.Change).
type Change[T any] = events.Change[T]

// TopicCreated announces a new topic.
func TopicCreated(t Topic) Event {
	return Event{Type: EventTopicCreated, Subject: t.ID, Payload: NewTopicEvent(t)}
}

// TopicUpdated announces a topic as it is after a change.
func TopicUpdated(t Topic) Event {
	return Event{Type: EventTopicUpdated, Subject: t.ID, Payload: NewTopicEvent(t)}
}

// TopicDeleted announces that a topic and its entries are gone.
func TopicDeleted(topicID string) Event {
	return Event{Type: EventTopicDeleted, Subject: topicID, Payload: TopicEvent{TopicID: topicID}}
}

// EntryCreated announces a new entry; entry events are about their topic.
func EntryCreated(e Entry) Event {
	return Event{Type: EventEntryCreated, Subject: e.TopicID, Payload: NewEntryEvent(e)}
}

// EntryUpdated announces an entry as it is after a change.
func EntryUpdated(e Entry) Event {
	return Event{Type: EventEntryUpdated, Subject: e.TopicID, Payload: NewEntryEvent(e)}
}

// EntryDeleted announces that an entry is gone.
func EntryDeleted(topicID, entryID string) Event {
	return Event{Type: EventEntryDeleted, Subject: topicID, Payload: EntryEvent{TopicID: topicID, TopicEntryID: entryID}}
}
