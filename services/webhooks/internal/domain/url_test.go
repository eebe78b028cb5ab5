package domain

import "testing"

func TestURLProblem(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/in":             true,
		"http://hooks.example.com:8080/in?x=1&y=2": true,
		"https://hooks.example.com./in":            true,
		"https://user:pw@hooks.example.com/in":     true,
		"https://a_b.example.com/in":               true,
		"https://93.184.216.34/in":                 true,
		"https://[2606:2800:220:1::1]:8443/in":     true,
		"https://hooks.example.com/a%20b#frag":     true,
		"https://xn--bcher-kva.example/":           true,
		"https://hooks.example.com/a b":            false,
		"https://hooks.example.com/ü":              false,
		"https://hooks.example.com/{x}":            false,
		"ftp://hooks.example.com/":                 false,
		"https:hooks.example.com":                  false,
		"https:///path":                            false,
		"http://hooks.example.com:99999/":          false,
		"http://hooks.example.com:0/":              false,
		"http://hooks.example.com:/":               false,
		"https://[::1":                             false,
		"https://[hooks.example.com]/":             false,
		"http://-/":                                false,
		"http://-a.example.com/":                   false,
		"https://hooks..example.com/":              false,
		"http://0x7f.1/":                           false,
		"http://2130706433/":                       false,
		"http://0x7f000001/":                       false,
		"http://example.0x1f/":                     false,
	} {
		if got := URLProblem(raw); (got == "") != ok {
			t.Errorf("%q: %q", raw, got)
		}
	}
}
