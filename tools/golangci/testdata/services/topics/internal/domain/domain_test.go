package domain_test

// A test may cross the layers (a component test builds the real adapters). No finding here.
import _ "github.com/customerapi/platform/services/topics/internal/adapters"
