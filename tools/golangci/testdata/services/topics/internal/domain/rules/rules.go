// Package rules is a domain sub-package: the rest of domain may import it. No finding here.
package rules

import _ "strings"
