package outbox

import (
	"time"

	"github.com/customerapi/platform/libs/retention"
)

// RetentionTables are the outbox's tables as the retention pruner sees them: a dead
// letter is kept for deadLetters after it died (0: forever). The outbox itself needs no
// pruning: the relay deletes what it published.
func RetentionTables(deadLetters time.Duration) []retention.Table {
	return []retention.Table{{Name: "outbox_dead_letters", Column: "dead_at", Keep: deadLetters}}
}
