package demodata

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

const maxMessages = 12

// Message kinds of a shape.
const (
	kSystem uint8 = iota
	kUser
	kReply // an assistant message answering the user
	kCall  // an assistant message calling a tool
	kTool  // the tool's result
)

// System prompt modes.
const (
	sysNone uint8 = iota
	sysText
	sysHash
)

// lengthWeights weight conversations of 2..12 messages: most are short.
var lengthWeights = []int{21, 16, 14, 11, 10, 8, 6, 5, 4, 3, 2}
var lengthWeightSum = sumInts(lengthWeights)

// shape is everything about a conversation that decides its usage: who, with
// which assistant and model, when each message was written and the tokens of
// every assistant message. It is drawn first from the conversation's own
// random stream, so it can be replayed cheaply without the text.
type shape struct {
	user       int32
	asst       int32
	model      int
	sys        uint8
	n, replies int
	uploads    int
	generated  int
	kind       [maxMessages]uint8
	at         [maxMessages]int64
	in, out    [maxMessages]int64
	micros     [maxMessages]int64
	tool       [maxMessages]int8
	updated    int64
}

func (g *generator) tools(asst int32) []skillDef {
	if asst >= 0 {
		return g.asst[asst].prof.skills
	}
	return genericTools
}

// shape draws the shape of a conversation from r. It must draw the same
// numbers in the same order every time it is called for one conversation.
func (g *generator) shape(r *rand.Rand, s *shape) {
	*s = shape{}
	s.user = g.pickUser(r)
	s.asst = -1
	if r.IntN(100) < 55 {
		s.asst = g.pickAssistant(r, s.user)
	}
	latest := g.end - 3*msHour
	start := g.pickTime(r, g.start, latest)
	if s.asst >= 0 {
		ap := &g.asst[s.asst]
		if c := ap.created + msHour; start < c {
			if c < latest {
				start = between(r, c, latest)
			} else {
				s.asst = -1
			}
		}
		// Nobody uses an assistant once it is archived; a conversation
		// lasts well under two hours.
		if ap.archived && start > ap.archAt-2*msHour {
			s.asst = -1
		}
	}
	s.model = weighted(r, modelWeights, modelWeightSum)
	if s.asst >= 0 && r.IntN(100) < 85 {
		s.model = g.asst[s.asst].model
	}
	switch x := r.IntN(100); {
	case s.asst >= 0 && x < 70, s.asst < 0 && x < 50:
		s.sys = sysText
	case s.asst >= 0, x < 65:
		s.sys = sysHash
	}
	n := 2 + weighted(r, lengthWeights, lengthWeightSum)
	if s.sys == sysText && n < 3 {
		n = 3
	}
	switch x := r.IntN(100); {
	case x < 7:
		s.uploads = 2
	case x < 25:
		s.uploads = 1
	}
	if r.IntN(100) < 15 {
		s.generated = 1
	}
	tools := g.tools(s.asst)
	m := &models[s.model]

	k := 0
	t := start
	ctx := int64(20)
	if s.sys != sysNone {
		ctx += between(r, 120, 700)
	}
	if s.sys == sysText {
		s.kind[0], s.at[0] = kSystem, t
		k = 1
		t += between(r, 5, 900)
	}
	ctx += int64(s.uploads) * between(r, 1500, 9000)
	reply := func(kind uint8, lo, hi int64) {
		s.kind[k], s.at[k] = kind, t
		s.in[k] = ctx
		s.out[k] = between(r, lo, hi)
		s.micros[k] = (s.in[k]*m.inPrice + s.out[k]*m.outPrice + 50) / 100
		ctx += s.out[k]
		s.replies++
		k++
	}
	for n-k >= 2 {
		s.kind[k], s.at[k] = kUser, t
		ctx += between(r, 15, 350)
		k++
		if n-k >= 3 && r.IntN(100) < 25 {
			tool := int8(r.IntN(len(tools)))
			t += between(r, 900, 9000)
			s.tool[k] = tool
			reply(kCall, 15, 120)
			t += between(r, 200, 4000)
			s.kind[k], s.at[k], s.tool[k] = kTool, t, tool
			ctx += between(r, 120, 2500)
			k++
			t += between(r, 1500, 20000)
			reply(kReply, 60, 1200)
		} else {
			t += between(r, 1500, 25000)
			reply(kReply, 40, 1400)
		}
		t += between(r, 8*msSecond, 10*msMinute)
	}
	s.n = k
	s.updated = s.at[k-1] + between(r, 0, 1500)
}

// conversation builds conversation i from its plan, drawing the text after
// the shape from the same stream.
func (g *generator) conversation(r *rand.Rand, s *shape, i int) spec.Conversation {
	p := &g.convs[i]
	m := &models[s.model]
	u := &g.users[s.user]
	c := spec.Conversation{
		ID:             g.convID(i),
		ConversationID: hexID("thr_", mix32(uint32(i)+uint32(mix64(g.seed+streamThreadSalt)))),
		StartedAt:      msTime(s.at[0]),
		UpdatedAt:      msTime(p.updated),
		User:           g.userRefs[s.user],
		Model:          m.name,
		ModelProvider:  m.provider,
	}
	topicDept := u.Department
	var prof *profile
	if s.asst >= 0 {
		ap := &g.asst[s.asst]
		c.Assistant = ap.ref
		prof = ap.prof
		topicDept = prof.dept
	}

	c.Parameters = parameters(r, prof, m)

	prompt := pick(r, genericSystemPrompts)
	if prof != nil {
		prompt = prof.instructions
	}
	switch s.sys {
	case sysText:
		c.SystemPrompt = prompt
	case sysHash:
		h, ok := g.sysHash[prompt]
		if !ok {
			h = sha256Of(prompt)
			g.sysHash[prompt] = h
		}
		c.SystemPromptHash = h
	}

	status := conversationStatus(r)
	c.Status = status

	// Attachments.
	for j := 0; j < s.uploads; j++ {
		f := pick(r, uploadFiles)
		c.Attachments = append(c.Attachments, g.attachment(c.ID, j, spec.AttachmentUploaded, f))
	}
	for j := 0; j < s.generated; j++ {
		f := pick(r, generatedFiles)
		c.Attachments = append(c.Attachments, g.attachment(c.ID, s.uploads+j, spec.AttachmentGenerated, f))
	}

	g.messages(r, s, &c, prompt, topicDept)

	var in, out, micros int64
	for k := 0; k < s.n; k++ {
		in += s.in[k]
		out += s.out[k]
		micros += s.micros[k]
	}
	c.Usage = &spec.TokenUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out, Cost: float64(micros) / 1e6}

	cl := pick(r, clients)
	var labels any
	if p.tie {
		labels = []string{"bulk-review-" + strconv.Itoa(int(time.UnixMilli(p.updated).UTC().Month()))}
	}
	c.Metadata = obj(
		"client", obj("name", cl.name, "version", cl.version),
		"workspace", g.deptSlugs[g.userDept[s.user]],
		"sessionId", hexID("sess_", r.Uint32()),
		"retentionDays", pick(r, []int{30, 90, 180, 365}),
		"locale", pick(r, []string{"en-GB", "en-US", "de-DE", "fr-FR", "ja-JP"}),
		"labels", labels,
	)
	return c
}

// parameters draws the parameters of a conversation: the assistant's
// defaults (prof), or the client's when prof is nil.
func parameters(r *rand.Rand, prof *profile, m *modelDef) *spec.Parameters {
	params := &spec.Parameters{}
	if prof != nil {
		params.Temperature = ptr(prof.temperature)
	} else {
		params.Temperature = ptr(pick(r, []float64{0, 0.2, 0.3, 0.5, 0.7, 1}))
	}
	if r.IntN(100) < 35 {
		params.TopP = ptr(pick(r, []float64{0.9, 0.95, 1}))
	}
	params.MaxTokens = ptr(pick(r, []int64{1024, 2048, 4096, 8192}))
	switch x := r.IntN(100); {
	case x < 8 && (m.provider == "openai" || m.provider == "anthropic"):
		params.Extra = map[string]json.RawMessage{"reasoningEffort": json.RawMessage(`"` + pick(r, []string{"low", "medium", "high"}) + `"`)}
	case x < 14:
		params.Extra = map[string]json.RawMessage{"stopSequences": json.RawMessage(`["END"]`)}
	case x < 18:
		params.Extra = map[string]json.RawMessage{"seed": json.RawMessage(strconv.Itoa(r.IntN(1000)))}
	}
	return params
}

// conversationStatus draws the status of a conversation.
func conversationStatus(r *rand.Rand) string {
	status := "completed"
	switch x := r.IntN(100); {
	case x < 3:
		status = "failed"
	case x < 5:
		status = "cancelled"
	case x < 7:
		status = "content_filtered"
	case x < 9:
		status = "max_tokens"
	case x < 10:
		status = "in_progress"
	}
	return status
}

// messages draws the messages of conversation c from its shape s, with the
// system prompt and the topics of department topicDept, and sets the tools
// they called.
func (g *generator) messages(r *rand.Rand, s *shape, c *spec.Conversation, prompt, topicDept string) {
	tools := g.tools(s.asst)
	tp := deptTopics[topicDept]
	c.Messages = make([]spec.Message, s.n)
	var used uint32 // bit set of tools called
	firstUser, firstReply := true, true
	topicIdx := 0
	lastReply := -1
	for k := 0; k < s.n; k++ {
		var role, text string
		switch s.kind[k] {
		case kSystem:
			role, text = spec.RoleSystem, prompt
		case kUser:
			role = spec.RoleUser
			if firstUser {
				topicIdx = r.IntN(len(tp.prompts))
				text = fillText(r, tp.prompts[topicIdx], "")
				if s.uploads > 0 {
					text += " See " + c.Attachments[0].Filename + "."
				}
				firstUser = false
			} else {
				text = fillText(r, pick(r, followUps), "")
			}
		case kCall:
			role = spec.RoleAssistant
			tool := tools[s.tool[k]]
			used |= 1 << uint(s.tool[k])
			text = fillText(r, pick(r, toolIntros), tool.name)
		case kTool:
			role = spec.RoleTool
			text = string(g.toolResult(r, tools[s.tool[k]]))
		case kReply:
			role = spec.RoleAssistant
			if firstReply {
				text = fillText(r, tp.replies[topicIdx%len(tp.replies)], "")
				firstReply = false
			} else {
				text = fillText(r, pick(r, genericReplies), "")
			}
			if r.IntN(100) < 60 {
				text += " " + fillText(r, pick(r, closings), "")
			}
			lastReply = k
		}
		c.Messages[k] = spec.Message{ID: "msg_" + strconv.Itoa(k+1), Role: role, Content: text, CreatedAt: msTime(s.at[k])}
	}
	if lastReply >= 0 {
		msg := &c.Messages[lastReply]
		switch c.Status {
		case "failed":
			msg.Content = "Sorry, the request failed: the model provider timed out. Please try again."
		case "content_filtered":
			msg.Content = "I cannot help with this request: it appears to contain personal data that policy does not allow me to process."
		case "max_tokens":
			msg.Content += " [truncated: maximum output length reached]"
		default:
			if s.generated > 0 {
				msg.Content += " I saved it as " + c.Attachments[s.uploads].Filename + "."
			}
		}
	}
	for j, t := range tools {
		if used&(1<<uint(j)) != 0 {
			c.Tools = append(c.Tools, spec.Tool{ID: t.id, Name: t.name, Type: t.typ})
		}
	}
}

func (g *generator) attachment(convID string, j int, kind string, f fileDef) spec.Attachment {
	return spec.Attachment{
		ID:       "file_" + convID[len("conv_"):] + "_" + strconv.Itoa(j+1),
		Kind:     kind,
		Filename: f.name,
		MimeType: f.mime,
		Hash:     sha256Of(convID, strconv.Itoa(j), f.name),
	}
}

// toolResult is the JSON a tool returned.
func (g *generator) toolResult(r *rand.Rand, t skillDef) []byte {
	b := make([]byte, 0, 128)
	switch t.typ {
	case spec.SkillFunction:
		return appendObj(b, "ok", true, "function", t.name, "result", obj("id", strconv.Itoa(1000+r.IntN(9000)), "name", pick(r, customers), "status", pick(r, []string{"open", "active", "pending", "closed"})))
	case spec.SkillMCP:
		return appendObj(b, "server", slug(t.name), "items", r.IntN(40)+1, "top", obj("title", fillText(r, pick(r, []string{"{jira}: export times out", "{customer} account plan", "Runbook: {region} failover", "Weekly metrics {quarter}"}), ""), "url", "https://"+slug(t.name)+"."+g.domain+"/"+strconv.Itoa(r.IntN(99999))))
	default:
		return appendObj(b, "tool", t.name, "matches", r.IntN(12)+1, "snippet", fillText(r, pick(r, []string{"Clause {clause}: either party may terminate with {days} days' notice.", "Revenue for {quarter} was {amount}.", "{customer} renewed in {quarter}.", "Policy section {clause} applies in {region}."}), ""))
	}
}

// fillText replaces the placeholders of tmpl with random values; {tool} is
// replaced with tool.
func fillText(r *rand.Rand, tmpl, tool string) string {
	if strings.IndexByte(tmpl, '{') < 0 {
		return tmpl
	}
	var b strings.Builder
	b.Grow(len(tmpl) + 32)
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			b.WriteString(tmpl)
			return b.String()
		}
		b.WriteString(tmpl[:i])
		switch tmpl[i+1 : i+j] {
		case "customer":
			b.WriteString(pick(r, customers))
		case "person":
			b.WriteString(title(pick(r, firstNames)))
		case "amount":
			b.WriteString("USD ")
			b.WriteString(strconv.Itoa(5 + r.IntN(200)))
			b.WriteString(",000")
		case "quarter":
			b.WriteString(pick(r, quarters))
		case "region":
			b.WriteString(pick(r, regionNames))
		case "n":
			b.WriteString(strconv.Itoa(2 + r.IntN(48)))
		case "ticket":
			b.WriteString("SUP-")
			b.WriteString(strconv.Itoa(10000 + r.IntN(90000)))
		case "jira":
			b.WriteString("ENG-")
			b.WriteString(strconv.Itoa(1000 + r.IntN(9000)))
		case "lang":
			b.WriteString(pick(r, langs))
		case "doc":
			b.WriteString(pick(r, docs))
		case "clause":
			b.WriteString(strconv.Itoa(2 + r.IntN(18)))
			b.WriteByte('.')
			b.WriteString(strconv.Itoa(1 + r.IntN(6)))
		case "days":
			b.WriteString(pick(r, []string{"30", "45", "60"}))
		case "tool":
			b.WriteString(tool)
		default:
			b.WriteString(tmpl[i : i+j+1])
		}
		tmpl = tmpl[i+j+1:]
	}
}

// usage returns the usage records of conversation i, one per assistant
// message, from its shape.
func (g *generator) usage(s *shape, i int, id string, fn func(any) error) error {
	u := &g.users[s.user]
	m := &models[s.model]
	asst := ""
	if s.asst >= 0 {
		asst = g.asst[s.asst].a.ID
	}
	j := 0
	for k := 0; k < s.n; k++ {
		if s.kind[k] != kReply && s.kind[k] != kCall {
			continue
		}
		j++
		rec := provider.UsageRecord{
			ID:             "req_" + id[len("conv_"):] + "_" + strconv.Itoa(j),
			At:             time.UnixMilli(s.at[k]).UTC(),
			ConversationID: id,
			UserID:         u.ID,
			Department:     u.Department,
			Model:          m.name,
			AssistantID:    asst,
			InputTokens:    s.in[k],
			OutputTokens:   s.out[k],
			Cost:           float64(s.micros[k]) / 1e6,
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}
