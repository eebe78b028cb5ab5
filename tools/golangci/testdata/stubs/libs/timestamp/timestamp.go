// Package timestamp is a stub for the lint fixture.
package timestamp
