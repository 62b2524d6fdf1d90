package telemetry

// SetBeforeConversationSave makes h run before each write of a
// conversation, with its id and the number of prompts it was built from;
// nil removes it.
func SetBeforeConversationSave(h func(id string, n int)) {
	if h == nil {
		beforeConversationSave.Store(nil)
		return
	}
	beforeConversationSave.Store(&h)
}
