package consumer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// defaultOwner names this process in leases: host:pid:random.
func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ownerDead reports whether owner names a process of this host (in the
// form of defaultOwner) that no longer runs: its lease may be taken over
// without waiting for it to expire. Owners of other hosts, or in another
// form, are never judged dead.
func ownerDead(owner string) bool {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return false
	}
	rest := owner[:i]
	j := strings.LastIndexByte(rest, ':')
	if j < 0 {
		return false
	}
	host, pidText := rest[:j], rest[j+1:]
	me, err := os.Hostname()
	if err != nil || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = proc.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}
