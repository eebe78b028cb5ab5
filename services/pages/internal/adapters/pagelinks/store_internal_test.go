package pagelinks

import "testing"

func TestLikeEscape(t *testing.T) {
	if got := likeEscape(`50%_off\`); got != `50\%\_off\\` {
		t.Fatalf("likeEscape = %q", got)
	}
}
