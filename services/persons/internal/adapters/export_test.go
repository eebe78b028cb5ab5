package adapters

import "context"

// SetShortCountSkip sets the estimate above which a short query walks the primary key
// first, so that tests reach that path without millions of persons.
func (s *Store) SetShortCountSkip(n float64) { s.search.shortCountSkip = n }

// NarrowKey is narrowKey, for its table test.
var NarrowKey = narrowKey

// IndexPattern is indexPattern, for the test of what the index looks up.
func (s *Store) IndexPattern(ctx context.Context, key string) (string, error) {
	return s.search.indexPattern(ctx, key)
}

// ReadSamplesEachTime makes the Store read the sampled search texts on every search, so
// that a test sees the statistics of its last ANALYZE.
func (s *Store) ReadSamplesEachTime() { s.search.samples.ttl = 0 }
