package consumer

import "github.com/aiusage/kit/internal/infra/liveness"

// defaultOwner names this process in leases: host:pid:random, with the
// random part prefixed by a tag of the process's pid namespace and boot
// when they are known ("host:pid:tag.random"; see package liveness).
func defaultOwner() string { return liveness.Name("") }

// ownerDead reports whether owner names a process of this host and pid
// namespace (in the form of defaultOwner, with the same pid-space tag) that
// no longer runs: its lease may be taken over without waiting for it to
// expire. Any other owner is never judged dead: its lease expires.
func ownerDead(owner string) bool { return liveness.Gone("", owner) }
