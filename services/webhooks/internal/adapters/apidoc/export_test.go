package apidoc

// Types lists the event types that have a payload example.
func (d *Document) Types() ([]string, error) {
	m, err := d.examples()
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(m))
	for t := range m {
		types = append(types, t)
	}
	return types, nil
}
