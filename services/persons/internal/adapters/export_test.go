package adapters

// SetShortCountSkip sets the estimate above which a short query walks the primary key
// first, so that tests reach that path without millions of persons.
func (s *Store) SetShortCountSkip(n float64) { s.shortCountSkip = n }
