//go:build unix

package httpx

import "syscall"

// openFileLimit returns the process's limit on open files (its soft
// RLIMIT_NOFILE).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 0, false
	}
	return uint64(rl.Cur), true // Rlimit.Cur is int64 on some systems
}
