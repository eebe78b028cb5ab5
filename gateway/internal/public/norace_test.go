//go:build !race

package public

// raceEnabled is true under the race detector, whose instrumentation allocates.
const raceEnabled = false
