// Package liveness names a process so that another process of the same
// host can tell, without waiting for a lease or a timeout to expire, that it
// no longer runs: the consumer's leases and the pusher's deliveries are
// taken over at once from a process killed with SIGKILL.
//
// A name is "prefix" + "host:pid:tag.random": the tag hashes the boot and
// the pid namespace, so that a pid is only ever compared within the space
// in which it means something (host names alone are not unique: containers
// sharing the host network, cloned machines), and the random part keeps
// the names of two runs apart.
package liveness

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

// Name returns this process's name: prefix followed by
// "host:pid:tag.random", or "host:pid:random" where the boot and the pid
// namespace cannot be read (such a name is never judged [Gone]).
func Name(prefix string) string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name(prefix, host, os.Getpid(), pidSpace(), hex.EncodeToString(b[:]))
}

// name formats a name of the form [Name] returns.
func name(prefix, host string, pid int, tag, random string) string {
	if tag != "" {
		random = tag + "." + random
	}
	return fmt.Sprintf("%s%s:%d:%s", prefix, host, pid, random)
}

// pidSpace identifies the space in which this process's pid means
// something: the boot and the pid namespace (Linux), hashed; "" where they
// cannot be read.
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

// Gone reports whether id, a name [Name] gave with prefix, names a process
// of this host and pid namespace (the same tag) that no longer runs. Any
// other id (another prefix, host or pid namespace, this very process, or
// not a name at all) is never judged gone: its holder's lease or timeout
// has to expire.
func Gone(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return false
	}
	rest, suffix := rest[:i], rest[i+1:]
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
