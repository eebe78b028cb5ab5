package pagelink

import (
	"fmt"
	"testing"
)

func TestNormalisePath(t *testing.T) {
	for in, want := range map[string]string{
		"/":                 "/",
		"/a/":               "/a",
		"/Spring-Sale":      "/Spring-Sale",
		"/a/b~c_d.e":        "/a/b~c_d.e",
		"/caf%C3%A9":        "/caf%C3%A9",
		"/a:b@c!$&'()*+,;=": "/a:b@c!$&'()*+,;=",
		"//":                "", // empty segment
		"/a//b":             "",
		"/a//":              "",
		"a":                 "", // the document's pattern refuses it first
		"/./a":              "",
		"/a/..":             "",
		"/%2e%2E":           "", // an encoded .. segment
		"/a/.%2e/b":         "",
		"/%2e":              "",
		"/a%2eb":            "/a%2eb", // a dot inside a segment is fine
		// Characters are the document's pattern's (TestBadInput tries them).
	} {
		got, err := NormalisePath(in)
		if (want == "") != (err != nil) || got != want {
			t.Errorf("NormalisePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	id := func(s string) *string { return &s }
	for name, tc := range map[string]struct {
		typ            string
		audience, page *string
		want           string
	}{
		"audience":                   {TargetAudience, id("audience_1"), nil, "[]"},
		"audience with its page":     {TargetAudience, id("audience_1"), id("page_1"), "[]"},
		"audience without audience":  {TargetAudience, nil, id("page_1"), "[invalid_type:audienceId]"},
		"page":                       {TargetPage, nil, id("page_1"), "[]"},
		"page routing with audience": {TargetPageRouting, id("audience_1"), id("page_1"), "[unrecognized_keys:audienceId]"},
		"page without anything":      {TargetPage, nil, nil, "[invalid_type:pageId]"},
		"page with audience only":    {TargetPage, id("audience_1"), nil, "[invalid_type:pageId unrecognized_keys:audienceId]"},
	} {
		got := []string{}
		for _, e := range CheckTarget(tc.typ, tc.audience, tc.page) {
			got = append(got, e.Code+":"+e.Field)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %v, want %s", name, got, tc.want)
		}
	}
}
