package domain

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeDomain(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM":                       "example.com",
		"https://www.example.com/path?q=1":  "example.com",
		"http://user:pw@Sub.Example.com:80": "sub.example.com",
		"example.com.":                      "example.com",
		" www.a-b.example ":                 "a-b.example",
		"localhost":                         "",
		"https://":                          "",
		"exa mple.com":                      "",
		"-bad.example":                      "",
		"":                                  "",
	} {
		if got := NormalizeDomain(in); got != want {
			t.Errorf("NormalizeDomain(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlugBase(t *testing.T) {
	for in, want := range map[string]string{
		"Ada Lovelace":     "ada-lovelace",
		"  Ada--Lovelace!": "ada-lovelace",
		"Zoë Ñúñez":        "zoe-nunez",
		"李雷":               "person",
		"":                 "person",
	} {
		if got := SlugBase(in); got != want {
			t.Errorf("SlugBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIdentifierKeys(t *testing.T) {
	if EmailKey(" A@B.Example ") != "a@b.example" {
		t.Error("EmailKey")
	}
	if PhoneKey("+1 (555) 010-0") != "+15550100" || PhoneKey("12") != "" {
		t.Error("PhoneKey")
	}
	if LinkedinKey("HTTPS://www.LinkedIn.com/in/Someone/?trk=x") != "linkedin.com/in/someone" {
		t.Errorf("LinkedinKey = %q", LinkedinKey("HTTPS://www.LinkedIn.com/in/Someone/?trk=x"))
	}
	if !ValidPhone("+44 20 7946 0000") || ValidPhone("call me") || ValidPhone("1+2") {
		t.Error("ValidPhone")
	}
}

func TestValidateSubmission(t *testing.T) {
	str := func(s string) *string { return &s }
	for name, tc := range map[string]struct {
		f          FormSubmitted
		kind, key  string
		failReason string
	}{
		"email":          {FormSubmitted{IdentifierType: "email", Identifier: "A@B.example"}, KindEmail, "a@b.example", ""},
		"tel":            {FormSubmitted{IdentifierType: "tel", Phone: str("+1 555 0100")}, KindPhone, "+15550100", ""},
		"linkedin_url":   {FormSubmitted{IdentifierType: "linkedin_url", LinkedinURL: str("https://linkedin.com/in/x")}, KindLinkedin, "linkedin.com/in/x", ""},
		"no type, email": {FormSubmitted{Email: str("x@y.example")}, KindEmail, "x@y.example", ""},
		"nothing":        {FormSubmitted{IdentifierType: "email"}, "", "", ReasonNoIdentifier},
		"blank":          {FormSubmitted{Email: str("  ")}, "", "", ReasonNoIdentifier},
		"bad email":      {FormSubmitted{IdentifierType: "email", Email: str("nope")}, "", "", ReasonInvalidIdentifier},
		"bad linkedin":   {FormSubmitted{LinkedinProfileURL: str("javascript:alert(1)")}, "", "", ReasonInvalidIdentifier},
	} {
		s, err := tc.f.Validate()
		switch {
		case tc.failReason != "":
			if err == nil || err.Reason != tc.failReason {
				t.Errorf("%s: err %v, want %s", name, err, tc.failReason)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case s.Kind != tc.kind || s.Key != tc.key:
			t.Errorf("%s: %s %s", name, s.Kind, s.Key)
		}
	}
}

func TestValidateCleansName(t *testing.T) {
	long := strings.Repeat("é", 300)
	bad := "A\x00B\xff"
	s, err := FormSubmitted{Email: &bad, Name: &long}.Validate()
	if err == nil || err.Reason != ReasonInvalidIdentifier {
		t.Fatalf("err = %v", err)
	}
	email := "x@y.example"
	s, err = FormSubmitted{Email: &email, Name: &long}.Validate()
	if err != nil || len([]rune(*s.Name)) != MaxNameLen || !utf8.ValidString(*s.Name) {
		t.Fatalf("name %q, err %v", *s.Name, err)
	}
	nul := "  A\x00B  "
	if s, _ := (FormSubmitted{Email: &email, Name: &nul}).Validate(); *s.Name != "AB" {
		t.Fatalf("name %q", *s.Name)
	}
}

func TestCanonicalPayload(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":[1.50,"<&>"]}`:             `{"a":[1.50,"<&>"],"b":1}`,
		`{"x":"\ud800"}`:                       "{\"x\":\"\ufffd\"}",
		"{\"x\":\"\xff\"}":                     "{\"x\":\"\ufffd\"}",
		`{"n":123456789012345678901234567890}`: `{"n":123456789012345678901234567890}`,
		`{"x":1,"x":2}`:                        `{"x":2}`,
	} {
		got, err := CanonicalPayload([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s, %v", in, got, err)
		}
	}
	for _, in := range []string{`null`, `[]`, `{`} {
		if _, err := CanonicalPayload([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// A payload is measured as sent: at the limit it is stored, one byte over it is refused.
func TestCheckPayload(t *testing.T) {
	atLimit := `{"k":"` + strings.Repeat("a", MaxPayloadBytes-len(`{"k":""}`)) + `"}`
	if got, err := CheckPayload([]byte(atLimit)); err != nil || len(got) != MaxPayloadBytes {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	over := `{"k":"` + strings.Repeat("a", MaxPayloadBytes-len(`{"k":""}`)+1) + `"}`
	if _, err := CheckPayload([]byte(over)); !errors.Is(err, ErrPayloadTooBig) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := CheckPayload([]byte(`{"x":"\ud800","n":123456789012345678901234567890,"small":1e-400}`)); err != nil {
		t.Fatalf("a payload jsonb stores after replacement: %v", err)
	}
	for _, in := range []string{`{"x":1e400}`, `{"x":[{"y":-1e309}]}`} {
		if _, err := CheckPayload([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestSearchText(t *testing.T) {
	email, dom := "ÉMILE@Zola.example", "zola.example"
	if got := (Person{Name: "Émile ZÖLA", Email: &email, Domain: &dom}).SearchText(); got != "émile zöla émile@zola.example zola.example" {
		t.Fatalf("search text %q", got)
	}
	if got := (Person{Name: "Solo"}).SearchText(); got != "solo  " {
		t.Fatalf("search text %q", got)
	}
}
