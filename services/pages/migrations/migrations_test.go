package migrations_test

import (
	"fmt"
	"testing"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/migrations"
)

// A database records each applied migration by set name, version and checksum
// (schema_migrations): the sets keep the names, files and contents that databases have
// applied, whichever folder embeds them (sessions and page links once lived in their own
// packages). A changed checksum here means a new migration is needed instead.
func TestSetsKeepWhatDatabasesApplied(t *testing.T) {
	want := []struct{ set, files string }{
		{"pages", "[1 0001_pages.sql 1153295ceb6c03de92cf640fcc6d2f116c8e917ddfe7fc92720b82331465189e 2 0002_work_order.sql e0797dde8f1041854b3d8b06c8946a24d9773911e9c070789877f2f318243274 3 0003_unfinished_by_audience.sql 398656f7b1f67d7ec3b124034e31b546dc3d4c5ed5a7931755c08247db5a36c9]"},
		{"pages-sessions", "[1 0001_audience_sessions.sql 422e3eaf742723eab2b69ba347285e6c7c69663f4ab44bbe8f61bb559af2ef10]"},
		{"pages-pagelinks", "[1 0001_page_links.sql fd4e57688f97cc0038ec270ad7393d475335528862b64cba21887f4d00d5f3d2]"},
	}
	if len(migrations.Sets) != len(want) {
		t.Fatalf("%d sets, want %d", len(migrations.Sets), len(want))
	}
	for i, set := range migrations.Sets {
		migs, err := postgres.LoadMigrations(set.FS)
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		for _, m := range migs {
			got = append(got, m.Version, m.Name, m.Sum)
		}
		if set.Name != want[i].set || fmt.Sprint(got) != want[i].files {
			t.Errorf("set %d = %s %v, want %s %s", i, set.Name, got, want[i].set, want[i].files)
		}
	}
}
