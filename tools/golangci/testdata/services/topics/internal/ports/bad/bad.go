// Package bad breaks each rule of ports once: two findings from list 'ports'.
package bad

import (
	_ "github.com/customerapi/platform/services/topics/internal/adapters"    // the database
	_ "github.com/customerapi/platform/services/topics/internal/application" // the wiring
)
