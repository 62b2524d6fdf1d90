//go:build race

package dashboard_test

// raceEnabled tells the browser tests they run under the race detector.
const raceEnabled = true
