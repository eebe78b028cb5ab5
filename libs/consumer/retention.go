package consumer

import (
	"time"

	"github.com/customerapi/platform/libs/retention"
)

// RetentionTables are the inbox's tables as the retention pruner sees them: a processed
// event ID is kept for inbox (longer than any redelivery: a redelivered event whose ID
// is gone is handled again), a dead letter for deadLetters; 0 keeps rows forever.
func RetentionTables(inbox, deadLetters time.Duration) []retention.Table {
	return []retention.Table{
		{Name: "inbox", Column: "processed_at", Keep: inbox},
		{Name: "inbox_dead_letters", Column: "created_at", Keep: deadLetters},
	}
}
