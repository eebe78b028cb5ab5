package pagelinks

import "testing"

func TestNormalisePath(t *testing.T) {
	for in, want := range map[string]string{
		"/":                 "/",
		"/a/":               "/a",
		"/Spring-Sale":      "/Spring-Sale",
		"/a/b~c_d.e":        "/a/b~c_d.e",
		"/caf%C3%A9":        "/caf%C3%A9",
		"/a:b@c!$&'()*+,;=": "/a:b@c!$&'()*+,;=",
		"//":                "", // empty segment
		"a":                 "",
		"/a?b":              "",
		"/a#b":              "",
		"/./a":              "",
		"/a/..":             "",
		"/%2e%2E":           "", // an encoded .. segment
		"/a/.%2e/b":         "",
		"/%2e":              "",
		"/a%2eb":            "/a%2eb", // a dot inside a segment is fine
		"/%4":               "",
		"/é":                "",
		"/a b":              "",
	} {
		got, err := NormalisePath(in)
		if (want == "") != (err != nil) || got != want {
			t.Errorf("NormalisePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestLikeEscape(t *testing.T) {
	if got := likeEscape(`50%_off\`); got != `50\%\_off\\` {
		t.Fatalf("likeEscape = %q", got)
	}
}
