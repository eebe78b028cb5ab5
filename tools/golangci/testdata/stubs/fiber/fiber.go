// Package fiber is a stub for the lint fixture.
package fiber
