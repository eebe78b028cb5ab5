// Package memqueue is an adapters sub-package. No finding here.
package memqueue

import _ "github.com/customerapi/platform/services/topics/internal/domain"
