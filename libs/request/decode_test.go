package request

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/apierror"
)

type content struct {
	Type    string `json:"type" validate:"required,oneof=text markdown"`
	Content string `json:"content" validate:"max=10"`
}

type sample struct {
	Title     string            `json:"title" validate:"required,max=5"`
	SortOrder *int64            `json:"sortOrder" validate:"omitempty,min=0,max=9007199254740991"`
	Source    string            `json:"source" validate:"omitempty,kebab"`
	Purpose   Nullable[string]  `json:"purpose" validate:"omitnil,min=1"`
	URL       string            `json:"url" validate:"omitempty,httpurl"`
	Tags      []string          `json:"tags" validate:"omitempty,max=2,dive,min=1"`
	Content   *content          `json:"content"`
	Payload   map[string]any    `json:"payload"`
	Flag      *bool             `json:"flag"`
	Labels    map[string]string `json:"labels"`
}

func issuesOf(t *testing.T, err *apierror.Error) []apierror.Issue {
	t.Helper()
	if err == nil {
		return nil
	}
	if err.Status != 400 || err.Code != apierror.CodeValidation {
		t.Fatalf("status/code = %d/%s", err.Status, err.Code)
	}
	d := err.Details.([]apierror.FieldIssues)
	if len(d) != 1 || d[0].Field != "body" {
		t.Fatalf("details = %+v", d)
	}
	return d[0].Issues
}

func TestDecodeJSON(t *testing.T) {
	v := NewValidator()
	for _, tc := range []struct {
		name  string
		body  string
		codes []string // expected issue codes, in order
		paths [][]any
	}{
		{"valid minimal", `{"title":"abc"}`, nil, nil},
		{"valid full", `{"title":"abc","sortOrder":3,"source":"a-b","purpose":null,"url":"https://x.y/z","tags":["a"],"content":{"type":"text","content":"hi"},"payload":{"a":[1,{"b":null}]},"flag":false,"labels":{"k":"v"}}`, nil, nil},
		{"empty body is an empty object", ``, []string{"invalid_type"}, [][]any{{"title"}}},
		{"malformed", `{"title":`, []string{"invalid_json"}, [][]any{{}}},
		{"trailing data", `{"title":"a"} {}`, []string{"invalid_json"}, [][]any{{}}},
		{"not an object", `[1]`, []string{"invalid_type"}, [][]any{{}}},
		{"unknown top-level key", `{"title":"a","extra":1}`, []string{"unrecognized_keys"}, [][]any{{"extra"}}},
		{"unknown nested key", `{"title":"a","content":{"type":"text","x":1}}`, []string{"unrecognized_keys"}, [][]any{{"content", "x"}}},
		{"wrong type", `{"title":5}`, []string{"invalid_type"}, [][]any{{"title"}}},
		{"null where not nullable", `{"title":"a","sortOrder":null}`, []string{"invalid_type"}, [][]any{{"sortOrder"}}},
		{"float for integer", `{"title":"a","sortOrder":1.5}`, []string{"invalid_type"}, [][]any{{"sortOrder"}}},
		{"fraction is not an integer literal", `{"title":"a","sortOrder":2.0}`, []string{"invalid_type"}, [][]any{{"sortOrder"}}},
		{"huge integer", `{"title":"a","sortOrder":1e300}`, []string{"too_big"}, [][]any{{"sortOrder"}}},
		{"beyond safe integer", `{"title":"a","sortOrder":9007199254740992}`, []string{"too_big"}, [][]any{{"sortOrder"}}},
		{"negative", `{"title":"a","sortOrder":-1}`, []string{"too_small"}, [][]any{{"sortOrder"}}},
		{"missing required", `{}`, []string{"invalid_type"}, [][]any{{"title"}}},
		{"empty required string", `{"title":""}`, []string{"too_small"}, [][]any{{"title"}}},
		{"too long", `{"title":"abcdef"}`, []string{"too_big"}, [][]any{{"title"}}},
		{"unicode length counts characters", `{"title":"ééééé"}`, nil, nil},
		{"bad pattern", `{"title":"a","source":"Bad_Source"}`, []string{"invalid_string"}, [][]any{{"source"}}},
		{"bad url", `{"title":"a","url":"ftp://x"}`, []string{"invalid_string"}, [][]any{{"url"}}},
		{"bad enum nested", `{"title":"a","content":{"type":"html"}}`, []string{"invalid_enum_value"}, [][]any{{"content", "type"}}},
		{"array element type", `{"title":"a","tags":["x",2]}`, []string{"invalid_type"}, [][]any{{"tags", 1}}},
		{"array element bound", `{"title":"a","tags":[""]}`, []string{"too_small"}, [][]any{{"tags", 0}}},
		{"array too long", `{"title":"a","tags":["a","b","c"]}`, []string{"too_big"}, [][]any{{"tags"}}},
		{"payload must be object", `{"title":"a","payload":[1]}`, []string{"invalid_type"}, [][]any{{"payload"}}},
		{"map value type", `{"title":"a","labels":{"k":1}}`, []string{"invalid_type"}, [][]any{{"labels", "k"}}},
		{"nullable empty string", `{"title":"a","purpose":""}`, []string{"too_small"}, [][]any{{"purpose"}}},
		{"NUL in a string", `{"title":"a\u0000"}`, []string{"invalid_string"}, [][]any{{"title"}}},
		{"NUL deep in free-form JSON", `{"title":"a","payload":{"a":[1,{"b":"x\u0000"}]}}`, []string{"invalid_string"}, [][]any{{"payload", "a", 1, "b"}}},
		{"NUL in an object key", `{"title":"a","payload":{"k\u0000":1}}`, []string{"invalid_string"}, [][]any{{"payload", "k\x00"}}},
		{"escaped backslash before u0000 is text", `{"title":"a\\u0000"}`, []string{"too_big"}, [][]any{{"title"}}},
		{"invalid UTF-8", "{\"title\":\"a\xff\"}", []string{"invalid_json"}, [][]any{{}}},
		{"several issues at once", `{"title":1,"x":1,"flag":"yes"}`, []string{"invalid_type", "invalid_type", "unrecognized_keys"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s sample
			issues := issuesOf(t, v.DecodeJSON([]byte(tc.body), &s))
			var codes []string
			for _, is := range issues {
				codes = append(codes, is.Code)
				if is.Message == "" {
					t.Errorf("issue %+v has no message", is)
				}
			}
			sortStrings(codes)
			want := append([]string(nil), tc.codes...)
			sortStrings(want)
			if !reflect.DeepEqual(codes, want) {
				t.Fatalf("codes = %v, want %v (issues %+v)", codes, want, issues)
			}
			for i, p := range tc.paths {
				if !reflect.DeepEqual(issues[i].Path, p) {
					t.Errorf("path[%d] = %#v, want %#v", i, issues[i].Path, p)
				}
			}
		})
	}
}

func sortStrings(s []string) { sortedStrings(s) }

func TestNullableStates(t *testing.T) {
	v := NewValidator()
	var absent, null, set sample
	if err := v.DecodeJSON([]byte(`{"title":"a"}`), &absent); err != nil {
		t.Fatal(err)
	}
	if err := v.DecodeJSON([]byte(`{"title":"a","purpose":null}`), &null); err != nil {
		t.Fatal(err)
	}
	if err := v.DecodeJSON([]byte(`{"title":"a","purpose":"p"}`), &set); err != nil {
		t.Fatal(err)
	}
	if absent.Purpose.Set || !null.Purpose.Set || !null.Purpose.Null || set.Purpose.Ptr() == nil || *set.Purpose.Ptr() != "p" {
		t.Fatalf("absent=%+v null=%+v set=%+v", absent.Purpose, null.Purpose, set.Purpose)
	}
}

func TestValueOfAnOptionalField(t *testing.T) {
	n, b := 7, true
	if Value(&n) != 7 || Value((*int)(nil)) != 0 || !Value(&b) || Value((*string)(nil)) != "" {
		t.Fatal("Value must return the pointed-to value, or the zero value for nil")
	}
}

func TestBodyTooLarge(t *testing.T) {
	v := NewValidator()
	body := `{"title":"` + strings.Repeat("a", apierror.MaxBodyBytes) + `"}`
	var s sample
	issues := issuesOf(t, v.DecodeJSON([]byte(body), &s))
	if len(issues) != 1 || issues[0].Code != "too_big" {
		t.Fatalf("issues = %+v", issues)
	}
}

func TestEnvelopeDetailsShape(t *testing.T) {
	v := NewValidator()
	var s sample
	err := v.DecodeJSON([]byte(`{"title":"abcdefgh"}`), &s)
	b, _ := json.Marshal(err.Details)
	want := `[{"field":"body","issues":[{"code":"too_big","message":"String must contain at most 5 character(s)","path":["title"]}]}]`
	if string(b) != want {
		t.Fatalf("details = %s\nwant      %s", b, want)
	}
	if !strings.Contains(err.Detail, "body.title") {
		t.Fatalf("detail %q does not name the field", err.Detail)
	}
}

func TestNamespacePath(t *testing.T) {
	for in, want := range map[string][]any{
		"S.title":              {"title"},
		"S.entries[3].content": {"entries", 3, "content"},
		"S.labels[key].x":      {"labels", "key", "x"},
		"S.matrix[1][2]":       {"matrix", 1, 2},
		"S":                    {},
	} {
		if got := namespacePath(in); !reflect.DeepEqual(got, want) {
			t.Errorf("namespacePath(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	v := NewValidator()
	for _, s := range []string{`{"title":"a"}`, `{"content":{"type":1}}`, `[`, `{"tags":[null]}`, `{"sortOrder":1e5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var s sample
		err := v.DecodeJSON(body, &s)
		if err != nil && (err.Status != 400 || err.Details == nil) {
			t.Fatalf("bad error %+v", err)
		}
	})
}

// A body of hundreds of thousands of invalid items gets an answer of a bounded size: the
// first apierror.MaxIssues issues are listed and the rest counted (a 1 MB body of 499,980
// invalid items used to produce a 46.9 MB error).
func TestManyIssuesAreCapped(t *testing.T) {
	v := NewValidator()
	items := (apierror.MaxBodyBytes - 100) / 2
	body := `{"title":"abc","tags":[` + strings.Repeat("1,", items-1) + `1]}`
	err := v.DecodeJSON([]byte(body), &sample{})
	if err == nil {
		t.Fatal("a body of invalid items must be refused")
	}
	d := err.Details.([]apierror.FieldIssues)
	if len(d[0].Issues) != apierror.MaxIssues {
		t.Fatalf("an error lists at most %d issues, listed %d", apierror.MaxIssues, len(d[0].Issues))
	}
	if want := items - apierror.MaxIssues; d[0].Omitted != want {
		t.Fatalf("omittedIssues must count the issues left out: got %d, want %d", d[0].Omitted, want)
	}
	env, _ := json.Marshal(apierror.Renderer{BaseURL: "http://x"}.Envelope(err, "req"))
	if len(env) > 32<<10 {
		t.Fatalf("the rendered error must stay small, it is %d bytes", len(env))
	}
	if !strings.Contains(err.Detail, fmt.Sprintf("and %d more issues", items-1)) {
		t.Fatalf("the detail must say how many issues there are in all: %q", err.Detail)
	}
}

// A body of a hundred thousand unknown keys is judged with work in proportion to its size:
// BenchmarkManyUnknownKeys shows the cost; this test only checks the answer.
func TestManyUnknownKeysAreCappedToo(t *testing.T) {
	body := manyUnknownKeys()
	err := NewValidator().DecodeJSON(body, &sample{})
	d := err.Details.([]apierror.FieldIssues)
	if len(d[0].Issues) != apierror.MaxIssues || d[0].Omitted == 0 {
		t.Fatalf("unknown keys must be capped at %d issues and the rest counted: %d listed, %d omitted",
			apierror.MaxIssues, len(d[0].Issues), d[0].Omitted)
	}
}

// BenchmarkManyUnknownKeys decodes a 1 MiB body of unknown keys (the order of its issues
// took 9 s of CPU with an insertion sort; an n log n sort takes milliseconds).
func BenchmarkManyUnknownKeys(b *testing.B) {
	body := manyUnknownKeys()
	v := NewValidator()
	for b.Loop() {
		_ = v.DecodeJSON(body, &sample{})
	}
}

func manyUnknownKeys() []byte {
	var sb strings.Builder
	sb.WriteString(`{"title":"abc"`)
	for i := 0; sb.Len() < apierror.MaxBodyBytes-64; i++ {
		fmt.Fprintf(&sb, `,"k%d":1`, i)
	}
	sb.WriteString("}")
	return []byte(sb.String())
}
