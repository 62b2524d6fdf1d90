// Package race tells a test whether it runs under the race detector
// (go test -race), which makes code several times slower: a test that
// measures latency or throughput against a bound checks it only when
// Enabled is false, and still runs its code for the detector.
package race
