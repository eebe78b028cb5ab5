package tenant

import "testing"

func TestIsInternal(t *testing.T) {
	for name, want := range map[string]bool{
		"X-Internal-Tenant-Id": true,
		"x-internal-anything":  true,
		"X-INTERNAL-":          true,
		"X-Internal":           false,
		"X-Request-Id":         false,
		"":                     false,
	} {
		if got := IsInternal(name); got != want {
			t.Errorf("IsInternal(%q) = %v, want %v", name, got, want)
		}
	}
}
