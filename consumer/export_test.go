package consumer

// DefaultOwnerForTest exposes the lease owner form of this process.
func DefaultOwnerForTest() string { return defaultOwner() }
