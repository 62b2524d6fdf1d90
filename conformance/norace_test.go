//go:build !race

package conformance_test

// raceEnabled is true when the tests run with the race detector.
const raceEnabled = false
