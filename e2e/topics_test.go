package e2e

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
)

func TestTopicsThroughTheGateway(t *testing.T) {
	c := api(t, newKey(t, nil))
	var ids []string
	for i := 0; i < 5; i++ {
		m := must(t, c.Do("POST", "/v0/topics", map[string]any{"title": fmt.Sprintf("Topic %d", i), "sortOrder": 5 - i}), 201)
		ids = append(ids, m["topicId"].(string))
	}
	first := ids[4] // sortOrder 1 sorts first
	e := must(t, c.Do("POST", "/v0/topics/"+first+"/entries", map[string]any{
		"content": map[string]any{"type": "markdown", "content": "**hello**"}}), 201)

	// Walk the list two at a time: every topic exactly once, in sortOrder.
	var walked []string
	path := "/v0/topics?limit=2"
	for {
		page := decode[apitypes.TopicPage](t, c.Do("GET", path, nil), 200)
		if page.TotalCount != 5 {
			t.Fatalf("totalCount = %v", page.TotalCount)
		}
		for _, it := range page.Items {
			walked = append(walked, it.TopicId)
		}
		if page.NextCursor == nil {
			break
		}
		path = "/v0/topics?limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if fmt.Sprint(walked) != fmt.Sprint(want) {
		t.Fatalf("walk = %v, want %v", walked, want)
	}

	got := decode[apitypes.Topic](t, c.Do("GET", "/v0/topics/"+first, nil), 200)
	if len(got.Entries) != 1 {
		t.Fatalf("topic entries = %+v", got.Entries)
	}
	entries := must(t, c.Do("GET", "/v0/topics/"+first+"/entries", nil), 200)
	if entries["totalCount"] != 1.0 {
		t.Fatalf("entries = %v", entries)
	}
	must(t, c.Do("PATCH", "/v0/topics/"+first+"/entries/"+e["topicEntryId"].(string), map[string]any{"sortOrder": 3}), 200)
	must(t, c.Do("PATCH", "/v0/topics/"+first, map[string]any{"title": "Renamed", "purpose": "testing"}), 200)
	must(t, c.Do("DELETE", "/v0/topics/"+first+"/entries/"+e["topicEntryId"].(string), nil), 204)
	must(t, c.Do("DELETE", "/v0/topics/"+first, nil), 204)
	must(t, c.Do("GET", "/v0/topics/"+first, nil), 404)

	// Another tenant sees none of it, and cannot use this tenant's cursors.
	other := api(t, newKey(t, nil))
	must(t, other.Do("GET", "/v0/topics/"+ids[0], nil), 404)
	cur := must(t, c.Do("GET", "/v0/topics?limit=1", nil), 200)["nextCursor"].(string)
	if r := other.Do("GET", "/v0/topics?cursor="+url.QueryEscape(cur), nil); r.Status != 400 {
		t.Fatalf("foreign cursor: %s", r)
	}
}

func TestTopicsValidation(t *testing.T) {
	c := api(t, newKey(t, nil))
	id := must(t, c.Do("POST", "/v0/topics", map[string]any{"title": "v"}), 201)["topicId"].(string)
	for name, tc := range map[string]struct {
		method, path string
		body         any
	}{
		"missing title":   {"POST", "/v0/topics", map[string]any{}},
		"unknown field":   {"POST", "/v0/topics", map[string]any{"title": "x", "nope": 1}},
		"wrong type":      {"POST", "/v0/topics", map[string]any{"title": []int{1}}},
		"malformed":       {"POST", "/v0/topics", rawBody(`{"title":"x",}`)},
		"bad entry type":  {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": map[string]any{"type": "video", "content": "x"}}},
		"limit zero":      {"GET", "/v0/topics?limit=0", nil},
		"limit too large": {"GET", "/v0/topics?limit=101", nil},
		"limit not int":   {"GET", "/v0/topics?limit=abc", nil},
		"garbage cursor":  {"GET", "/v0/topics?cursor=abc", nil},
		"patch bad order": {"PATCH", "/v0/topics/" + id, map[string]any{"sortOrder": "first"}},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
}

// readTopicEvents collects topics.events for a subject until n arrived.
func readTopicEvents(t *testing.T, brokers []string, subject string, n int) []events.Envelope {
	return kafkatest.ReadEvents(t, brokers, events.TopicTopics, n, kafkatest.OfSubject(subject))
}

// With the broker stopped, writes still succeed; their events arrive once it is back.
func TestBrokerOutage(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, nil))
	s.StopBroker()
	id := must(t, c.Do("POST", "/v0/topics", map[string]any{"title": "written during an outage"}), 201)["topicId"].(string)
	must(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 201)
	if err := s.StartBroker(); err != nil {
		t.Fatal(err)
	}
	got := readTopicEvents(t, s.Brokers(), id, 2)
	if got[0].Type != "topic.created" || got[1].Type != "topic.entry.created" {
		t.Fatalf("events = %s, %s", got[0].Type, got[1].Type)
	}
}
