package customerapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	customerapi "github.com/customerapi/platform/clients/go"
)

// versionsServer answers GET /v0/pages/page_1/audiences/aud_1/versions with five versions
// in pages of two (cursors "b" and "c"), or with a 404 for the cursor "gone". It records
// the query of every request and fails the test on a request the iterator should not send.
func versionsServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	pages := map[string]string{
		"":  `{"items":[{"versionId":"v1"},{"versionId":"v2"}],"totalCount":5,"hasMore":true,"nextCursor":"b"}`,
		"b": `{"items":[{"versionId":"v3"},{"versionId":"v4"}],"totalCount":5,"hasMore":true,"nextCursor":"c"}`,
		"c": `{"items":[{"versionId":"v5"}],"totalCount":5,"hasMore":false,"nextCursor":null}`,
	}
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		if r.URL.Path != "/v0/pages/page_1/audiences/aud_1/versions" || r.Header.Get("x-api-key") != "k" {
			t.Errorf("request %s %s with key %q: the path parameters or the key were not sent", r.Method, r.URL.Path, r.Header.Get("x-api-key"))
		}
		q := r.URL.Query()
		if q.Get("limit") != "2" || q.Get("include") != "snapshot" {
			t.Errorf("query %q: every page must carry the caller's limit and include", r.URL.RawQuery)
		}
		w.Header().Set("Content-Type", "application/json")
		body, ok := pages[q.Get("cursor")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			body = envelope404
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries...)
	}
}

// The generated iterators walk a list across nextCursor in one range statement: every
// item once, the caller's parameters on every page, a starting cursor honoured, an error
// yielded (typed) and the walk stopped, and no further page fetched after a break.
func TestGeneratedIteratorWalksEveryPage(t *testing.T) {
	ctx := context.Background()
	limit, include := 2, "snapshot"
	params := func(cursor *string) *customerapi.ListAudienceVersionsParams {
		return &customerapi.ListAudienceVersionsParams{Limit: &limit, Include: &include, Cursor: cursor}
	}
	walk := func(api *customerapi.API, cursor *string) ([]string, error) {
		var ids []string
		for v, err := range api.ListAudienceVersionsAll(ctx, "page_1", "aud_1", params(cursor)) {
			if err != nil {
				return ids, err
			}
			ids = append(ids, v.VersionId)
		}
		return ids, nil
	}

	srv, queries := versionsServer(t)
	api, err := customerapi.New(srv.URL, "k", customerapi.WithRetries(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := walk(api, nil)
	if err != nil || strings.Join(ids, ",") != "v1,v2,v3,v4,v5" {
		t.Fatalf("walked %v, %v; want v1…v5 across three pages", ids, err)
	}
	if got := queries(); len(got) != 3 || strings.Contains(got[0], "cursor=") ||
		!strings.Contains(got[1], "cursor=b") || !strings.Contains(got[2], "cursor=c") {
		t.Fatalf("queries %q: want no cursor, then each page's nextCursor, and nothing after a null one", got)
	}
	// The caller's params are not changed by the walk, so the same params walk again.
	p := params(nil)
	for _, err := range api.ListAudienceVersionsAll(ctx, "page_1", "aud_1", p) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p.Cursor != nil {
		t.Fatalf("the iterator changed the caller's params (Cursor %q)", *p.Cursor)
	}

	srv, _ = versionsServer(t)
	api, _ = customerapi.New(srv.URL, "k", customerapi.WithRetries(0, 0))
	if ids, err := walk(api, new("b")); err != nil || strings.Join(ids, ",") != "v3,v4,v5" {
		t.Fatalf("from cursor b: walked %v, %v; want v3,v4,v5 (params.Cursor is where the walk starts)", ids, err)
	}

	srv, _ = versionsServer(t)
	api, _ = customerapi.New(srv.URL, "k", customerapi.WithRetries(0, 0))
	ids, err = walk(api, new("gone"))
	var apiErr *customerapi.Error
	if len(ids) != 0 || !errors.As(err, &apiErr) || !customerapi.IsNotFound(err) ||
		!strings.HasPrefix(err.Error(), "listAudienceVersions: ") {
		t.Fatalf("a 404 page: walked %v, err %v; want a *customerapi.Error naming the operation, and the walk stopped", ids, err)
	}

	srv, queries = versionsServer(t)
	api, _ = customerapi.New(srv.URL, "k", customerapi.WithRetries(0, 0))
	for _, err := range api.ListAudienceVersionsAll(ctx, "page_1", "aud_1", params(nil)) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if got := queries(); len(got) != 1 {
		t.Fatalf("a break after the first item still fetched %d pages", len(got))
	}
}

// Every list operation of the client (a …WithResponse method whose params have a Cursor
// and whose JSON200 has Items and NextCursor) has its generated <Operation>All iterator
// yielding the items' type.
func TestEveryListOperationHasAnIterator(t *testing.T) {
	api := reflect.TypeFor[*customerapi.API]()
	lists := 0
	for i := range api.NumMethod() {
		m := api.Method(i)
		name, ok := strings.CutSuffix(m.Name, "WithResponse")
		if !ok {
			continue
		}
		item, ok := listItem(m.Type)
		if !ok {
			continue
		}
		lists++
		all, ok := api.MethodByName(name + "All")
		if !ok {
			t.Errorf("%s lists with a cursor but %sAll is missing: run make clients-extras", m.Name, name)
			continue
		}
		// iter.Seq2[V, error] is func(yield func(V, error) bool).
		seq := all.Type.Out(0)
		if seq.Kind() != reflect.Func || seq.NumIn() != 1 || seq.In(0).NumIn() != 2 ||
			seq.In(0).In(0) != item || seq.In(0).In(1) != reflect.TypeFor[error]() {
			t.Errorf("%sAll returns %s, want an iter.Seq2[%s, error]", name, seq, item)
		}
	}
	if lists < 15 {
		t.Fatalf("found %d list operations in the client; the document has 15", lists)
	}
}

// listItem reports whether a …WithResponse method's type is a list operation, and its
// items' type.
func listItem(fn reflect.Type) (reflect.Type, bool) {
	for i := range fn.NumIn() {
		in := fn.In(i)
		if in.Kind() == reflect.Pointer && in.Elem().Kind() == reflect.Struct && strings.HasSuffix(in.Elem().Name(), "Params") {
			if _, ok := in.Elem().FieldByName("Cursor"); !ok {
				return nil, false
			}
			out := fn.Out(0).Elem()
			ok200, ok := out.FieldByName("JSON200")
			if !ok || ok200.Type.Kind() != reflect.Pointer || ok200.Type.Elem().Kind() != reflect.Struct {
				return nil, false
			}
			items, hasItems := ok200.Type.Elem().FieldByName("Items")
			_, hasNext := ok200.Type.Elem().FieldByName("NextCursor")
			if !hasItems || !hasNext || items.Type.Kind() != reflect.Slice {
				return nil, false
			}
			return items.Type.Elem(), true
		}
	}
	return nil, false
}

// What internal/clientgen writes (the iterators, the code samples and the files that
// compile them) is what it makes of api/openapi.yaml and client.gen.go now: regenerated
// into a temporary folder, each file must be byte for byte the committed one.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the staleness check runs the generator with go: %v", err)
	}
	dir := t.TempDir()
	files := map[string]string{ // flag: committed file
		"out":        "iterators.gen.go",
		"samples":    "../../api/codesamples.json",
		"go-samples": "examples_gen_test.go",
		"ts-samples": "../typescript/test/samples/samples.gen.ts",
	}
	args := []string{"run", "-C", "internal/clientgen", "."}
	for flag := range files {
		args = append(args, "-"+flag, filepath.Join(dir, flag))
	}
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run the generator (internal/clientgen): %v\n%s", err, msg)
	}
	for flag, path := range files {
		fresh, err := os.ReadFile(filepath.Join(dir, flag))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: it differs from what api/openapi.yaml generates; run make clients-extras (or go generate ./clients/go) and commit it", path)
		}
	}
}
