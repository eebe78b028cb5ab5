package pgtest

import "testing"

// TestFreePortNeverTwice: a port handed out is free until its user listens, so a second
// caller in the same process must get another one (two services of one test once got the
// same port and one of them could not listen).
func TestFreePortNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 500; i++ {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("FreePort handed out port %d twice in one process", p)
		}
		seen[p] = true
	}
}
