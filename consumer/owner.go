package consumer

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// defaultOwner names this process in leases: host:pid:random, with the
// random part prefixed by a tag of the process's pid namespace and boot
// when they are known ("host:pid:tag.random").
func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	if tag := pidSpace(); tag != "" {
		suffix = tag + "." + suffix
	}
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), suffix)
}

// pidSpace identifies the space in which this process's pid means
// something: the boot and the pid namespace (Linux), hashed; "" where they
// cannot be read. Host names alone are not unique (containers sharing the
// host network, cloned machines).
func pidSpace() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "|" + ns))
	return hex.EncodeToString(sum[:6])
}

// ownerDead reports whether owner names a process of this host and pid
// namespace (in the form of defaultOwner, with the same pid-space tag) that
// no longer runs: its lease may be taken over without waiting for it to
// expire. Any other owner is never judged dead: its lease expires.
func ownerDead(owner string) bool {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return false
	}
	rest, suffix := owner[:i], owner[i+1:]
	tag, _, ok := strings.Cut(suffix, ".")
	if mine := pidSpace(); !ok || mine == "" || tag != mine {
		return false
	}
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
