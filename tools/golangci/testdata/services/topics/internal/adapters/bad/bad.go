// Package bad breaks each rule of adapters once: three findings from list 'adapters'.
package bad

import (
	_ "github.com/customerapi/platform/services/topics/internal/app"         // the use cases
	_ "github.com/customerapi/platform/services/topics/internal/application" // the wiring
	_ "github.com/customerapi/platform/services/topics/internal/ports"       // the handlers
)
