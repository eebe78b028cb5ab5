// Package worker is an app sub-package. No finding here.
package worker

import _ "github.com/customerapi/platform/services/topics/internal/domain"
