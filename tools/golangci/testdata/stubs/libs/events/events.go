// Package events is a stub for the lint fixture.
package events
