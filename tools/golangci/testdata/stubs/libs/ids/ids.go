// Package ids is a stub for the lint fixture.
package ids
