package domain

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/errkind"
)

func ptr(s string) *string { return &s }

func TestOverlay(t *testing.T) {
	if Overlay(nil, nil) != nil {
		t.Fatal("overlay of nothing is not nil")
	}
	base := &Metadata{Title: ptr("page"), Description: ptr("desc"), Keywords: []string{"a"}}
	got := Overlay(base, &Metadata{Title: ptr("audience"), Robots: []string{"noindex"}})
	if *got.Title != "audience" || *got.Description != "desc" || got.Keywords[0] != "a" || got.Robots[0] != "noindex" {
		t.Fatalf("overlay = %+v", got)
	}
	if *base.Title != "page" {
		t.Fatal("overlay changed the base")
	}
	if o := Overlay(nil, &Metadata{Title: ptr("x")}); *o.Title != "x" {
		t.Fatalf("overlay without base = %+v", o)
	}
}

func TestAudienceChangesAndContext(t *testing.T) {
	a := &Audience{ID: "audience_1", PageID: "page_1", ComputedName: "Audience 1",
		PageMetadata: &Metadata{Title: ptr("T"), Keywords: []string{"x", "y"}}}
	if a.EffectiveName() != "Audience 1" {
		t.Fatal(a.EffectiveName())
	}
	c := ContextOf(a, "pc")
	if c.CurrentMetaTitle != "T" || c.CurrentMetaKeywords != "x, y" || c.PageContext != "pc" || c.Value(FieldSupplementaryContext) != "" {
		t.Fatalf("context = %+v", c)
	}
	a.ApplyChange(ContextChange{Field: FieldMetaKeywords, NewValue: " b , ,c"})
	a.ApplyChange(ContextChange{Field: FieldMetaTitle, NewValue: "New"})
	a.ApplyChange(ContextChange{Field: FieldSupplementaryContext, NewValue: "ctx"})
	c = ContextOf(a, "pc")
	if c.CurrentMetaTitle != "New" || c.CurrentMetaKeywords != "b, c" || c.CurrentSupplementaryContext != "ctx" {
		t.Fatalf("context after changes = %+v", c)
	}
	a.ApplyChange(ContextChange{Field: FieldSupplementaryContext, NewValue: ""})
	if a.SupplementaryContext != nil {
		t.Fatal("an empty supplementary context did not clear it")
	}
}

func TestPageStatus(t *testing.T) {
	now := time.Now()
	p := &Page{Status: PageDraft}
	if err := p.Restore(now); !errors.Is(err, ErrNotRestorable) {
		t.Fatalf("restore of a draft = %v", err)
	}
	if err := p.Publish(now); err != nil || p.Status != PagePublished {
		t.Fatalf("publish = %v, %s", err, p.Status)
	}
	p.Archive(now)
	if p.Status != PageArchived || p.ArchivedAt == nil {
		t.Fatalf("archive = %+v", p)
	}
	if err := p.Publish(now); !errors.Is(err, ErrPageArchived) {
		t.Fatalf("publish of an archived page = %v", err)
	}
	if err := p.Restore(now); err != nil || p.Status != PageDraft || p.ArchivedAt != nil {
		t.Fatalf("restore = %v, %+v", err, p)
	}
	p.DeletedAt = &now
	if err := p.Restore(now); err != nil || p.DeletedAt != nil {
		t.Fatalf("restore of a deleted page = %v", err)
	}
	p.Actions = []Action{{ActionID: "a"}}
	if err := p.Apply(PagePatch{SetHeaderAction: true, HeaderActionID: ptr("b")}, now); !errors.Is(err, ErrUnknownHeaderAct) {
		t.Fatalf("unknown header action = %v", err)
	}
	dup := []Action{{ActionID: "a"}, {ActionID: "b"}, {ActionID: "a"}}
	if e := errkind.Of(p.Apply(PagePatch{Actions: &dup, SetHeaderAction: true}, now)); e == nil || e.Kind() != errkind.Invalid ||
		fmt.Sprint(e.Path) != "[actions 2 actionId]" || !strings.Contains(e.Error(), `actions[2] has the actionId "a" of actions[0]`) {
		t.Fatalf("duplicate action IDs = %v", e)
	}
	distinct := []Action{{ActionID: "a"}, {ActionID: "A"}}
	if err := p.Apply(PagePatch{Actions: &distinct, SetHeaderAction: true, HeaderActionID: ptr("A")}, now); err != nil {
		t.Fatalf("actionIds differing in case = %v", err)
	}
}

func TestCheckChange(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes
	for _, tc := range []struct {
		field, value string
		ok           bool
	}{
		{FieldMetaTitle, long(MaxMetaTitle), true},
		{FieldMetaTitle, long(MaxMetaTitle + 1), false},
		{FieldMetaDescription, long(MaxMetaDescription), true},
		{FieldMetaDescription, long(MaxMetaDescription + 1), false},
		// A supplementary context holds what newValue may hold: the document's maxLength
		// (20000) bounds it, so it is not checked here again.
		{FieldSupplementaryContext, long(20001), true},
		{FieldMetaKeywords, strings.Repeat("k, ,", MaxKeywords), true}, // empty entries do not count
		{FieldMetaKeywords, strings.Repeat("k,", MaxKeywords+1), false},
		{FieldMetaKeywords, "a, " + long(MaxKeywordLen), true},
		{FieldMetaKeywords, "a, " + long(MaxKeywordLen+1), false},
	} {
		if got := CheckChange(tc.field, tc.value) == ""; got != tc.ok {
			t.Errorf("CheckChange(%s, %d chars) ok = %v, want %v", tc.field, len(tc.value), got, tc.ok)
		}
	}
}
