package domain

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
