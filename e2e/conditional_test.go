package e2e

import (
	"sync"
	"testing"

	"github.com/customerapi/platform/api/apitest"
)

// Conditional requests against the whole system: a topic's read carries an ETag;
// If-None-Match with it is a 304; two PATCHes with that ETag in If-Match, sent at once,
// are one 200 and one 412 PRECONDITION_FAILED; the topic then holds the one applied.
func TestConditionalUpdates(t *testing.T) {
	c := api(t, newKey(t, nil))
	created := must2(t, c.Do("POST", "/v0/topics", map[string]any{"title": "Before"}), 201)
	id, _ := created.Map()["topicId"].(string)
	read := must2(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	etag := read.Header.Get("ETag")
	if etag == "" || created.Header.Get("ETag") != etag {
		t.Fatalf("the create and the read of one representation carry one ETag: %q, %q", created.Header.Get("ETag"), etag)
	}
	if r := c.With("If-None-Match", etag).Do("GET", "/v0/topics/"+id, nil); r.Status != 304 || len(r.Body) != 0 {
		t.Fatalf("If-None-Match with the current ETag: want 304, got %s", r)
	}
	answers := make([]*apitest.Response, 2)
	var wg sync.WaitGroup
	for i, title := range []string{"Editor A", "Editor B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = c.With("If-Match", etag).Do("PATCH", "/v0/topics/"+id, map[string]any{"title": title})
		}()
	}
	wg.Wait()
	var applied string
	statuses := map[int]int{}
	for _, r := range answers {
		statuses[r.Status]++
		if r.Status == 200 {
			applied, _ = r.Map()["title"].(string)
		}
	}
	if statuses[200] != 1 || statuses[412] != 1 {
		t.Fatalf("two PATCHes with one If-Match: want one 200 and one 412, got %s and %s", answers[0], answers[1])
	}
	if now := must2(t, c.Do("GET", "/v0/topics/"+id, nil), 200).Map()["title"]; now != applied {
		t.Fatalf("the topic holds %v, the applied PATCH set %q", now, applied)
	}
}
