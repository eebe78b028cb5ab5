package application_test

import (
	"os"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/topics/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

func start(t *testing.T, opts servicetest.Options) *servicetest.Service {
	return servicetest.Start(t, application.Name, application.Migrations, application.Setup, opts)
}

func client(t *testing.T, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// The response bodies are the document's generated shapes (api/apitypes).
type (
	Topic        = apitypes.Topic
	TopicEntry   = apitypes.TopicEntry
	EntryContent = apitypes.TopicEntryContent
)

// The request bodies the tests send when they mean to send a valid one. A body that is
// wrong on purpose (a bad type, an unknown field, an explicit null) stays a map.

// topicCreate is the TopicCreate schema.
type topicCreate struct {
	Title     string `json:"title"`
	Purpose   string `json:"purpose,omitempty"`
	SortOrder *int   `json:"sortOrder,omitempty"`
	IsDefault bool   `json:"isDefault,omitempty"`
}

// topicUpdate is the TopicUpdate schema, without the explicit null that clears purpose
// (send a map for that).
type topicUpdate struct {
	Title     string  `json:"title,omitempty"`
	Purpose   *string `json:"purpose,omitempty"`
	SortOrder *int    `json:"sortOrder,omitempty"`
	IsDefault *bool   `json:"isDefault,omitempty"`
}

// entryCreate is the TopicEntryCreate schema; entryUpdate is TopicEntryUpdate.
type entryCreate struct {
	Content   EntryContent `json:"content"`
	SortOrder *int         `json:"sortOrder,omitempty"`
}

type entryUpdate struct {
	Content   *EntryContent `json:"content,omitempty"`
	SortOrder *int          `json:"sortOrder,omitempty"`
}

// textEntry is an entry of plain text.
func textEntry(s string) entryCreate {
	return entryCreate{Content: EntryContent{Type: "text", Content: s}}
}

func createTopic(t testing.TB, c *apitest.Client, body topicCreate) Topic {
	t.Helper()
	return apitest.Decode[Topic](t, c.Do("POST", "/v0/topics", body), 201, "creating a topic with a valid body must answer 201 with the topic")
}

func getTopic(t testing.TB, c *apitest.Client, id string) Topic {
	t.Helper()
	return apitest.Decode[Topic](t, c.Do("GET", "/v0/topics/"+id, nil), 200, "an existing topic must be readable by its ID")
}

// patchTopic sends body (a topicUpdate, or a map for an explicit null) and returns the
// updated topic.
func patchTopic(t testing.TB, c *apitest.Client, id string, body any) Topic {
	t.Helper()
	return apitest.Decode[Topic](t, c.Do("PATCH", "/v0/topics/"+id, body), 200, "a valid patch of an existing topic must answer 200 with the topic")
}

func listTopics(t testing.TB, c *apitest.Client, query string) apitypes.TopicPage {
	t.Helper()
	return apitest.Decode[apitypes.TopicPage](t, c.Do("GET", "/v0/topics"+query, nil), 200, "listing topics must answer 200 with a TopicPage")
}

func addEntry(t testing.TB, c *apitest.Client, topicID string, body entryCreate) TopicEntry {
	t.Helper()
	return apitest.Decode[TopicEntry](t, c.Do("POST", "/v0/topics/"+topicID+"/entries", body), 201,
		"adding a valid entry to an existing topic must answer 201 with the entry")
}

func listEntries(t testing.TB, c *apitest.Client, topicID, query string) apitypes.TopicEntryPage {
	t.Helper()
	return apitest.Decode[apitypes.TopicEntryPage](t, c.Do("GET", "/v0/topics/"+topicID+"/entries"+query, nil), 200,
		"listing an existing topic's entries must answer 200 with a TopicEntryPage")
}

// nextCursor returns the nextCursor of a page that must have one.
func nextCursor[P apitypes.TopicPage | apitypes.TopicEntryPage](t testing.TB, p P, what string) string {
	t.Helper()
	var hasMore bool
	var next *string
	switch p := any(p).(type) {
	case apitypes.TopicPage:
		hasMore, next = p.HasMore, p.NextCursor
	case apitypes.TopicEntryPage:
		hasMore, next = p.HasMore, p.NextCursor
	}
	if next == nil || !hasMore {
		t.Fatalf("%s has more items than its limit, so it must have hasMore true and a nextCursor; got hasMore %v, nextCursor nil",
			what, hasMore)
	}
	return *next
}

// waitForClockPast waits until the clock has moved past stamp (a timestamp the service
// wrote, to the millisecond), so that the next write is stamped later than it.
func waitForClockPast(t testing.TB, stamp string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		t.Fatalf("timestamps must be RFC 3339; got %q: %v", stamp, err)
	}
	testwait.For(t, time.Second, "the clock to pass "+stamp, func() (bool, string) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		return now.After(at), now.Format(time.RFC3339Nano)
	})
}

// readEvents reads the topics.events topic from the start until n events are seen.
func readEvents(t *testing.T, b *kafkatest.Broker, n int) []events.Envelope {
	return kafkatest.ReadEvents(t, []string{b.Addr}, events.TopicTopics, n, nil)
}
