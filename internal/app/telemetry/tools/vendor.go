package tools

import "strings"

// deprecatedGenAIEvents are the per-message events of the older GenAI
// conventions. They carry one message each (its role and, with content
// capture, its text) and no token counts: the usage of the request is on
// its span, so they are not counted.
var deprecatedGenAIEvents = map[string]bool{
	"gen_ai.system.message": true, "gen_ai.user.message": true, "gen_ai.assistant.message": true,
	"gen_ai.tool.message": true, "gen_ai.choice": true,
}

// vendorPrefixes start the names of GitHub Copilot's own metrics and
// events: github.copilot.*, and copilot_chat.*, which VS Code still sends
// beside it under the older name. Tokens reach the service through the
// GenAI names Copilot sends as well (gen_ai.client.token.usage, the spans,
// the inference details event); the vendor names count tool calls, edits,
// acceptance and durations, twice where both namespaces are sent. They
// are known, and not counted.
var vendorPrefixes = []string{"github.copilot.", "copilot_chat."}

// vendorNamespace reports whether name is one of GitHub Copilot's own.
func vendorNamespace(name string) bool {
	for _, p := range vendorPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// notCountedEvent reports whether an event name not mapped to an event is
// known to carry nothing counted: a deprecated GenAI message event or one
// of Copilot's own.
func notCountedEvent(name string) bool {
	return deprecatedGenAIEvents[name] || vendorNamespace(name)
}
