package demodata

import "github.com/aiusage/kit/spec"

// The fixed vocabulary of the generated organisation. Everything here is
// ASCII without <, > or &, so encoding/json writes it unchanged.

type deptDef struct {
	name   string
	weight int
	teams  []string
}

var deptDefs = []deptDef{
	{"Engineering", 30, []string{"platform", "payments", "mobile", "data-infra", "sre"}},
	{"Sales", 14, []string{"emea", "amer", "apac", "enterprise"}},
	{"Support", 14, []string{"tier1", "tier2", "billing"}},
	{"Marketing", 8, []string{"growth", "brand", "content"}},
	{"Product", 7, []string{"core", "design", "research"}},
	{"Finance", 6, []string{"fpa", "payables", "tax"}},
	{"Legal", 4, []string{"contracts", "privacy"}},
	{"HR", 4, []string{"talent", "people-ops"}},
	{"Operations", 5, []string{"procurement", "it"}},
	{"Security", 3, []string{"appsec", "grc"}},
	{"Data Science", 5, []string{"analytics", "ml"}},
}

var regions = []string{"emea", "amer", "apac"}

var firstNames = []string{
	"ada", "alan", "grace", "linus", "margaret", "ken", "barbara", "dennis", "frances", "john",
	"radia", "tim", "hedy", "claude", "katherine", "edsger", "sophie", "niklaus", "anita", "donald",
	"joan", "bjarne", "mary", "guido", "lynn", "james", "shafi", "leslie", "carol", "robin",
	"amara", "kenji", "priya", "mateo", "ingrid", "omar", "yuki", "lena", "tomas", "zara",
	"chidi", "elena", "rahul", "freya", "diego", "mei", "lars", "aisha", "noah", "sofia",
	"arjun", "clara", "emeka", "hana", "ivan", "julia", "kofi", "lucia", "marek", "nadia",
}

var lastNames = []string{
	"lovelace", "turing", "hopper", "torvalds", "hamilton", "thompson", "liskov", "ritchie", "allen", "mccarthy",
	"perlman", "berners-lee", "lamarr", "shannon", "johnson", "dijkstra", "wilson", "wirth", "borg", "knuth",
	"clarke", "stroustrup", "kenneth", "rossum", "conway", "gosling", "goldwasser", "lamport", "shaw", "milner",
	"okafor", "tanaka", "sharma", "garcia", "larsen", "haddad", "sato", "fischer", "novak", "ahmed",
	"mensah", "rossi", "gupta", "nielsen", "silva", "chen", "berg", "bello", "cohen", "moreau",
	"patel", "keller", "eze", "kim", "petrov", "schmidt", "asante", "romero", "kowalski", "haidari",
}

type modelDef struct {
	name, provider string
	weight         int
	// inPrice and outPrice are US cents per million tokens, so a request's
	// cost in micro-dollars is (in*inPrice + out*outPrice) / 100.
	inPrice, outPrice int64
}

var models = []modelDef{
	{"gpt-4o", "openai", 22, 250, 1000},
	{"gpt-4o-mini", "openai", 14, 15, 60},
	{"gpt-4.1", "openai", 8, 200, 800},
	{"o3-mini", "openai", 4, 110, 440},
	{"claude-sonnet-4-5", "anthropic", 18, 300, 1500},
	{"claude-haiku-4-5", "anthropic", 7, 100, 500},
	{"claude-opus-4-1", "anthropic", 2, 1500, 7500},
	{"gemini-2.5-pro", "google", 7, 125, 1000},
	{"gemini-2.5-flash", "google", 8, 30, 250},
	{"mistral-large-latest", "mistral", 5, 200, 600},
	{"mistral-small-latest", "mistral", 3, 20, 60},
	{"llama-3.3-70b-instruct", "meta", 2, 60, 60},
}

var modelWeights, modelWeightSum = func() ([]int, int) {
	w := make([]int, len(models))
	for i, m := range models {
		w[i] = m.weight
	}
	return w, sumInts(w)
}()

type skillDef struct {
	id, name, typ string
}

var (
	skWeb       = skillDef{"skill_web_search", "web_search", spec.SkillBuiltin}
	skCode      = skillDef{"skill_code_interpreter", "code_interpreter", spec.SkillBuiltin}
	skFiles     = skillDef{"skill_file_search", "file_search", spec.SkillBuiltin}
	skImage     = skillDef{"skill_image_generation", "image_generation", spec.SkillBuiltin}
	skJira      = skillDef{"skill_jira", "Jira", spec.SkillMCP}
	skGitHub    = skillDef{"skill_github", "GitHub", spec.SkillMCP}
	skSFDC      = skillDef{"skill_salesforce", "Salesforce", spec.SkillMCP}
	skZendesk   = skillDef{"skill_zendesk", "Zendesk", spec.SkillMCP}
	skConfl     = skillDef{"skill_confluence", "Confluence", spec.SkillMCP}
	skSnow      = skillDef{"skill_snowflake", "Snowflake", spec.SkillMCP}
	skRedline   = skillDef{"skill_redline", "Redline", spec.SkillPlugin}
	skDocuSign  = skillDef{"skill_docusign", "DocuSign", spec.SkillPlugin}
	skGrammar   = skillDef{"skill_grammarly", "Grammarly", spec.SkillPlugin}
	skTableau   = skillDef{"skill_tableau", "Tableau", spec.SkillPlugin}
	skFigma     = skillDef{"skill_figma", "Figma", spec.SkillPlugin}
	fnCustomer  = skillDef{"skill_lookup_customer", "lookup_customer", spec.SkillFunction}
	fnTicket    = skillDef{"skill_create_ticket", "create_ticket", spec.SkillFunction}
	fnInvoice   = skillDef{"skill_get_invoice", "get_invoice", spec.SkillFunction}
	fnPolicy    = skillDef{"skill_search_policies", "search_policies", spec.SkillFunction}
	fnSQL       = skillDef{"skill_run_sql", "run_sql", spec.SkillFunction}
	fnContract  = skillDef{"skill_fetch_contract", "fetch_contract", spec.SkillFunction}
	fnRefund    = skillDef{"skill_issue_refund", "issue_refund", spec.SkillFunction}
	fnCalendar  = skillDef{"skill_find_slots", "find_slots", spec.SkillFunction}
	fnIncidents = skillDef{"skill_list_incidents", "list_incidents", spec.SkillFunction}
)

// genericTools are the tools of a conversation without an assistant.
var genericTools = []skillDef{skWeb, skCode, skFiles, skImage}

type connectorDef struct {
	typ    string
	scopes []string
}

var (
	cnDrive      = connectorDef{"google-drive", []string{"drive.readonly"}}
	cnSharePoint = connectorDef{"sharepoint", []string{"Sites.Read.All", "Files.Read.All"}}
	cnSlack      = connectorDef{"slack", []string{"channels:read", "chat:write"}}
	cnSFDC       = connectorDef{"salesforce", []string{"api", "refresh_token"}}
	cnZendesk    = connectorDef{"zendesk", []string{"tickets:read", "tickets:write"}}
	cnGitHub     = connectorDef{"github", []string{"repo:read", "pull_requests:write"}}
	cnJira       = connectorDef{"jira", []string{"read:jira-work", "write:jira-work"}}
	cnConfl      = connectorDef{"confluence", []string{"read:confluence-content.all"}}
	cnSnowflake  = connectorDef{"snowflake", []string{"role:analyst", "warehouse:reporting"}}
	cnBox        = connectorDef{"box", []string{"root_readonly"}}
	cnNotion     = connectorDef{"notion", []string{"read_content"}}
	cnWorkday    = connectorDef{"workday", []string{"worker:read"}}
)

var allConnectors = []connectorDef{cnDrive, cnSharePoint, cnSlack, cnSFDC, cnZendesk, cnGitHub, cnJira, cnConfl, cnSnowflake, cnBox, cnNotion, cnWorkday}

type knowledgeDef struct {
	name, typ, mime string
}

// profile is the template of an assistant.
type profile struct {
	name, dept, description, instructions string
	model                                 string
	temperature                           float64
	skills                                []skillDef
	connectors                            []connectorDef
	knowledge                             []knowledgeDef
}

var profiles = []profile{
	{"Contract Reviewer", "Legal", "Reviews supplier and customer contracts against the legal playbook.",
		"Compare every clause with the playbook. List deviations with the clause number, the risk and a suggested redline. Never give a final legal opinion.",
		"claude-sonnet-4-5", 0.2, []skillDef{skFiles, skRedline, fnContract, skConfl}, []connectorDef{cnSharePoint, cnDrive},
		[]knowledgeDef{{"Contract playbook 2026", "file", "application/pdf"}, {"Fallback clause library", "file", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}}},
	{"Support Triage", "Support", "Classifies incoming tickets, suggests a priority and drafts the first reply.",
		"Classify the ticket (billing, bug, how-to, account), set a priority from P1 to P4 and draft a polite first reply. Link the matching help article.",
		"gpt-4o-mini", 0.3, []skillDef{skZendesk, fnTicket, fnCustomer, skFiles}, []connectorDef{cnZendesk, cnConfl},
		[]knowledgeDef{{"Help centre export", "url", ""}, {"Support macros", "file", "text/csv"}}},
	{"Code Review Buddy", "Engineering", "Reviews pull requests for bugs, race conditions and missing tests.",
		"Review the diff. Point out correctness problems first, then concurrency, then style. Suggest concrete code. Keep comments short.",
		"claude-sonnet-4-5", 0.1, []skillDef{skGitHub, skCode, skJira, fnIncidents}, []connectorDef{cnGitHub, cnJira},
		[]knowledgeDef{{"Engineering handbook", "url", ""}, {"Go style guide", "file", "text/markdown"}}},
	{"Sales Email Coach", "Sales", "Drafts and improves prospecting and follow-up emails.",
		"Write short, specific emails. One call to action. Use the account notes from Salesforce. Never promise discounts.",
		"gpt-4o", 0.7, []skillDef{skSFDC, skGrammar, fnCustomer, skWeb}, []connectorDef{cnSFDC, cnSlack},
		[]knowledgeDef{{"Messaging guide FY26", "file", "application/pdf"}}},
	{"Policy Q&A", "HR", "Answers employee questions about HR policies and benefits.",
		"Answer from the policy documents only and cite the policy section. If the policy does not cover the question, say so and point to the HR helpdesk.",
		"gpt-4.1", 0.2, []skillDef{fnPolicy, skFiles, cnSkill("skill_workday", "Workday", spec.SkillMCP)}, []connectorDef{cnWorkday, cnSharePoint},
		[]knowledgeDef{{"Employee handbook", "file", "application/pdf"}, {"Benefits overview", "file", "application/pdf"}, {"Leave policy", "url", ""}}},
	{"Expense Auditor", "Finance", "Checks expense reports against the travel and expense policy.",
		"Check every line against the expense policy. Flag duplicates, missing receipts and amounts over the limits. Output a table.",
		"gemini-2.5-pro", 0.0, []skillDef{fnInvoice, skCode, skTableau, skFiles}, []connectorDef{cnSharePoint},
		[]knowledgeDef{{"Travel and expense policy", "file", "application/pdf"}}},
	{"Campaign Copywriter", "Marketing", "Writes campaign copy in the brand voice.",
		"Write in the brand voice: plain words, short sentences, no superlatives. Offer three variants.",
		"gpt-4o", 0.9, []skillDef{skGrammar, skImage, skFigma, skWeb}, []connectorDef{cnDrive, cnNotion},
		[]knowledgeDef{{"Brand voice guide", "file", "application/pdf"}, {"Product positioning", "url", ""}}},
	{"Incident Commander", "Engineering", "Helps run incidents: timelines, status updates and postmortems.",
		"Keep a timeline. Draft status updates every 30 minutes in plain language. After the incident, draft a blameless postmortem.",
		"claude-sonnet-4-5", 0.2, []skillDef{fnIncidents, skJira, skGitHub, cnSkill("skill_pagerduty", "PagerDuty", spec.SkillPlugin)}, []connectorDef{cnSlack, cnJira},
		[]knowledgeDef{{"Incident runbooks", "url", ""}}},
	{"RFP Responder", "Sales", "Answers RFP and security questionnaire sections from approved content.",
		"Answer only from the approved answer library. Mark anything not covered as NEEDS REVIEW.",
		"claude-opus-4-1", 0.2, []skillDef{skFiles, skSFDC, skDocuSign, fnCustomer}, []connectorDef{cnSharePoint, cnSFDC},
		[]knowledgeDef{{"Approved answer library", "file", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}, {"SOC 2 report summary", "file", "application/pdf"}}},
	{"SQL Helper", "Data Science", "Writes and explains SQL against the analytics warehouse.",
		"Write ANSI SQL for Snowflake. Use the documented tables only. Explain joins and filters in one sentence each.",
		"gpt-4.1", 0.1, []skillDef{skSnow, fnSQL, skCode, skTableau}, []connectorDef{cnSnowflake},
		[]knowledgeDef{{"Warehouse data dictionary", "database", ""}}},
	{"Security Questionnaire Bot", "Security", "Drafts answers to customer security questionnaires.",
		"Answer from the trust centre content. Never disclose internal hostnames or key material. Flag questions about pen-test results for review.",
		"claude-sonnet-4-5", 0.1, []skillDef{skFiles, skConfl, fnPolicy, skDocuSign}, []connectorDef{cnConfl, cnBox},
		[]knowledgeDef{{"Trust centre FAQ", "url", ""}, {"Information security policy", "file", "application/pdf"}}},
	{"Release Notes Writer", "Product", "Turns merged changes into customer-facing release notes.",
		"Group changes into New, Improved and Fixed. Write for customers, not engineers. Link the docs.",
		"mistral-large-latest", 0.5, []skillDef{skGitHub, skJira, skGrammar, skWeb}, []connectorDef{cnGitHub, cnJira, cnNotion},
		[]knowledgeDef{{"Docs style guide", "url", ""}}},
	{"Meeting Summariser", "Operations", "Summarises meeting notes into decisions and action items.",
		"Summarise into Decisions, Action items (owner, date) and Open questions. No more than 200 words.",
		"gemini-2.5-flash", 0.3, []skillDef{skFiles, fnCalendar, skConfl, skWeb}, []connectorDef{cnDrive, cnSlack},
		nil},
	{"Refund Helper", "Support", "Checks refund eligibility and drafts the refund reply.",
		"Check the refund policy and the invoice. Refunds over 500 USD need a team lead. Draft the reply and the refund request.",
		"gpt-4o-mini", 0.2, []skillDef{fnRefund, fnInvoice, skZendesk, fnCustomer}, []connectorDef{cnZendesk},
		[]knowledgeDef{{"Refund policy", "file", "application/pdf"}}},
	{"Forecast Analyst", "Finance", "Builds revenue and spend forecasts from the ledger.",
		"Show the method, the assumptions and a sensitivity table. Round to thousands.",
		"claude-sonnet-4-5", 0.2, []skillDef{skCode, skSnow, skTableau, fnSQL}, []connectorDef{cnSnowflake, cnSharePoint},
		[]knowledgeDef{{"Chart of accounts", "file", "text/csv"}}},
	{"Interview Planner", "HR", "Plans interview loops and writes structured interview questions.",
		"Propose a loop of four interviews with competencies, questions and a scoring rubric. Avoid questions about protected characteristics.",
		"gpt-4o", 0.6, []skillDef{fnCalendar, skFiles, cnSkill("skill_greenhouse", "Greenhouse", spec.SkillMCP)}, []connectorDef{cnWorkday},
		[]knowledgeDef{{"Competency framework", "file", "application/pdf"}}},
	{"NDA Drafter", "Legal", "Drafts mutual and one-way NDAs from the approved template.",
		"Start from the approved template. Only change party names, governing law and term. Highlight every change.",
		"claude-haiku-4-5", 0.1, []skillDef{skRedline, skDocuSign, fnContract}, []connectorDef{cnSharePoint},
		[]knowledgeDef{{"NDA template", "file", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}}},
	{"SEO Brief Writer", "Marketing", "Writes SEO briefs and outlines for landing pages.",
		"Give the search intent, the primary and secondary keywords, an outline with H2s and three title options.",
		"gemini-2.5-flash", 0.7, []skillDef{skWeb, skGrammar, fnSQL}, []connectorDef{cnNotion},
		nil},
	{"Translator", "Operations", "Translates documents and messages, keeping the formatting.",
		"Translate faithfully. Keep names, numbers and formatting. Use the company glossary.",
		"mistral-small-latest", 0.2, []skillDef{skFiles, fnPolicy}, nil,
		[]knowledgeDef{{"Company glossary", "file", "text/csv"}}},
	{"Onboarding Guide", "HR", "Guides new hires through their first weeks.",
		"Answer questions from new hires about tools, accounts and first-week tasks. Be friendly and brief.",
		"gpt-4o-mini", 0.5, []skillDef{fnPolicy, fnCalendar, skConfl, skWeb}, []connectorDef{cnConfl, cnSlack},
		[]knowledgeDef{{"New hire checklist", "url", ""}}},
}

func cnSkill(id, name, typ string) skillDef { return skillDef{id, name, typ} }

var qualifiers = []string{"EMEA", "Americas", "APAC", "Pilot", "v2", "Enterprise", "Internal", "Beta", "DACH", "Nordics", "UK", "Fast"}

var genericSystemPrompts = []string{
	"You are the company assistant. Be concise. Do not reveal confidential information to people outside the company.",
	"You are a helpful assistant for employees. Follow the acceptable use policy and say when you are unsure.",
	"You help employees with writing, analysis and code. Prefer short answers with examples.",
}

// Content of conversations. Placeholders in braces are filled by fillText.

type topic struct {
	prompts []string
	replies []string
}

var deptTopics = map[string]topic{
	"Engineering": {
		prompts: []string{
			"Review this {lang} function for race conditions: the worker pool drops jobs under load.",
			"Write a migration adding an index on orders(customer_id, created_at) without locking the table.",
			"Why does our {lang} service return 502s after deploys? Logs show connection resets.",
			"Draft a postmortem summary for {jira}: checkout latency spiked for {n} minutes.",
			"Generate unit tests for the retry helper, covering backoff and cancellation.",
			"Explain optimistic versus pessimistic locking for the inventory service.",
		},
		replies: []string{
			"The race comes from reading the shared map outside the mutex; move the read inside the lock.",
			"Create the index concurrently and backfill in batches of {n}000 rows.",
			"The load balancer closes idle connections after 60 seconds; set the client idle timeout below that.",
			"Root cause: a cache stampede after the config reload. Action items: jittered expiry, a load test.",
			"Here are table-driven tests for the zero, one and many retry cases.",
			"Optimistic locking retries on a version check: use it where conflicts are rare.",
		},
	},
	"Sales": {
		prompts: []string{
			"Write a follow-up email to {person} at {customer} after yesterday's demo.",
			"Summarise the open opportunities with {customer} and what blocks each one.",
			"{customer} says {amount} is over budget for {quarter}. Draft a reply.",
			"Prepare talking points for the renewal call with {customer} in {region}.",
			"Answer section {n} of the {customer} RFP about data residency and SSO.",
		},
		replies: []string{
			"Subject: Next steps after the demo. Thanks for your time yesterday; here is the summary.",
			"Two deals are waiting on security review and one on budget approval in {quarter}.",
			"Anchor on the value from the pilot and offer a phased rollout instead of a discount.",
			"Lead with adoption numbers: {n}% of seats active, then raise the expansion.",
			"Data stays in the {region} region; SSO supports SAML 2.0 and SCIM provisioning.",
		},
	},
	"Support": {
		prompts: []string{
			"{customer} reports exports time out. Ticket {ticket}. What should I check first?",
			"Classify this ticket: we were charged twice and cannot download invoices.",
			"Write a friendly reply explaining how to reset two-factor authentication.",
			"Summarise the last {n} tickets about exports and find the common cause.",
			"Draft a refund reply for {ticket}: billed for {n} unused seats.",
		},
		replies: []string{
			"Check the export size first; anything over 2 GB needs the async export.",
			"Category: billing. Priority: P2. The duplicate charge is a known issue with card retries.",
			"Go to Settings, Security, then Reset two-factor. You will get a confirmation email.",
			"Most of them hit the 10 minute timeout on exports with attachments.",
			"We have refunded the {n} unused seats; the credit shows within five working days.",
		},
	},
	"Legal": {
		prompts: []string{
			"Summarise the termination clause of {doc} with {customer} and flag unusual notice periods.",
			"Compare clause {clause} of {doc} with our playbook position.",
			"Draft a mutual NDA for a pilot with {customer}, governed by English law.",
			"Does {doc} let the customer audit our subprocessors? Quote the clause.",
			"Which DPA obligations apply if we move data to {region}?",
		},
		replies: []string{
			"Clause {clause} allows termination on {days} days' notice; our standard is 90 days.",
			"The liability cap is twelve months of fees, which matches the playbook.",
			"The draft uses the approved template with a two-year term and English law.",
			"Yes: the audit right is limited to once a year with 30 days' notice.",
			"Transfers to {region} need the standard contractual clauses and a transfer assessment.",
		},
	},
	"Finance": {
		prompts: []string{
			"Explain the variance between budget and actuals for cloud spend in {quarter}.",
			"Check this expense report: {n} client dinners in one week, {amount} in total.",
			"Build a formula to forecast monthly recurring revenue with {n}% churn.",
			"Summarise the payment terms from {customer} and flag anything over 60 days.",
		},
		replies: []string{
			"Actuals are {n}% over budget, mostly from storage growth and one-off egress.",
			"Three dinners exceed the per-person limit and one receipt is missing.",
			"MRR next month = MRR x (1 - churn) + new MRR; the sheet applies it per cohort.",
			"Two invoices have 90-day terms, which breaks the 60-day policy.",
		},
	},
	"Marketing": {
		prompts: []string{
			"Write three subject lines for the {quarter} launch email.",
			"Draft a LinkedIn post announcing our partnership with {customer}.",
			"Create an SEO brief for a page on AI governance for {region} companies.",
			"Rewrite this paragraph in our brand voice: shorter sentences, no jargon.",
		},
		replies: []string{
			"1. Your reports, finally on time. 2. Less admin, more insight. 3. What is new in {quarter}.",
			"We are proud to partner with {customer} to bring governed AI to their teams.",
			"Intent: informational. Primary keyword: AI governance. Outline with five sections.",
			"Here is the shorter version, down from {n} words to 60.",
		},
	},
	"Product": {
		prompts: []string{
			"Turn these customer notes into a PRD outline for bulk export.",
			"Write release notes for version 4.{n} of the mobile app.",
			"Prioritise these five feature requests with RICE and explain the scores.",
		},
		replies: []string{
			"Problem, goals, non-goals, user stories, rollout and open questions.",
			"New: offline mode. Improved: faster search. Fixed: crash when uploading large photos.",
			"Bulk export scores highest: reach {n}00 accounts, high impact, medium effort.",
		},
	},
	"HR": {
		prompts: []string{
			"How many days of parental leave do employees in {region} get?",
			"Draft interview questions for a senior {lang} engineer, focused on system design.",
			"Summarise the feedback from {n} exit interviews into themes.",
			"Write an onboarding checklist for a new hire starting on Monday.",
		},
		replies: []string{
			"The leave policy gives 20 weeks of paid leave in {region}, section 4.2.",
			"Ask them to design a rate limiter, then probe failure modes and trade-offs.",
			"Themes: career growth, manager support and workload.",
			"Day one: laptop, accounts and a buddy. Week one: team intros and first ticket.",
		},
	},
	"Operations": {
		prompts: []string{
			"Compare the three laptop quotes and recommend one for {region}.",
			"Draft a purchase request for {n} monitors for the {region} office.",
			"Summarise this vendor review meeting into actions.",
		},
		replies: []string{
			"The second quote is cheapest over three years once support is included.",
			"Purchase request: {n} monitors, budget code OPS-{n}, needed by month end.",
			"Decisions: renew for one year. Actions: legal to review the DPA by Friday.",
		},
	},
	"Security": {
		prompts: []string{
			"Answer {customer}'s questionnaire: encryption at rest, key rotation and SOC 2.",
			"Triage this alert: impossible travel sign-in for a user in {region}.",
			"Write a phishing awareness note about fake invoice emails.",
		},
		replies: []string{
			"Data is encrypted with AES-256 at rest; keys rotate every 90 days; SOC 2 Type II.",
			"The second sign-in came through the corporate VPN exit in {region}; likely benign.",
			"Watch for invoices from unknown senders that ask for new bank details.",
		},
	},
	"Data Science": {
		prompts: []string{
			"Write SQL for weekly active users by plan over the last {n} weeks.",
			"Why does the churn model underpredict for {region} customers?",
			"Explain this A/B test result: conversion up {n}% with p = 0.04.",
		},
		replies: []string{
			"SELECT date_trunc('week', ts), plan, count(DISTINCT user_id) FROM events GROUP BY 1, 2.",
			"The training data has few {region} accounts; reweight or add a region feature.",
			"The lift is significant but small; run it two more weeks to rule out novelty.",
		},
	},
}

var followUps = []string{
	"Thanks. Can you make it shorter?",
	"Put that in a table with owners and dates.",
	"What would change for {region}?",
	"Good. Now draft the message to {person}.",
	"Can you double-check the numbers?",
	"Translate that into German, please.",
	"Add a short summary at the top.",
	"Which of these is the riskiest?",
}

var genericReplies = []string{
	"Here is the shorter version.",
	"Done. I kept the tone neutral.",
	"Here is the table with owners and dates.",
	"The main risk is timing rather than cost.",
	"I would check this with {person} before sending.",
	"The numbers add up; one total was rounded.",
}

var closings = []string{
	"Let me know if you want a shorter version.",
	"Want me to turn this into an email to {person}?",
	"I can add sources if you need them.",
	"Shall I draft the next step as well?",
	"Check the figures against the latest report before sharing.",
}

var toolIntros = []string{
	"Let me check that with {tool}.",
	"Looking it up with {tool}.",
	"I will use {tool} first.",
}

var customers = []string{"Northwind", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Retail", "Soylent Foods", "Tyrell Systems", "Cyberdyne Labs", "Hooli", "Vandelay Imports", "Massive Dynamic"}
var docs = []string{"the MSA", "the DPA", "the order form", "the reseller agreement", "the SLA"}
var langs = []string{"Go", "Python", "TypeScript", "Kotlin", "Java", "Rust"}
var quarters = []string{"Q1", "Q2", "Q3", "Q4"}
var regionNames = []string{"EMEA", "North America", "APAC", "LATAM", "DACH", "the Nordics"}

type fileDef struct {
	name, mime string
}

var uploadFiles = []fileDef{
	{"supplier-agreement.pdf", "application/pdf"},
	{"q1-pipeline.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
	{"incident-log.txt", "text/plain"},
	{"screenshot.png", "image/png"},
	{"customer-notes.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
	{"expenses.csv", "text/csv"},
	{"rfp-questions.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
	{"diff.patch", "text/x-diff"},
}

var generatedFiles = []fileDef{
	{"summary.md", "text/markdown"},
	{"chart.png", "image/png"},
	{"forecast.csv", "text/csv"},
	{"draft-reply.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
	{"slides.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
}

var clients = []struct{ name, version string }{
	{"web", "4.2.1"}, {"web", "4.3.0"}, {"desktop", "1.18.2"}, {"slack", "2.0.7"}, {"api", "v1"}, {"ios", "3.9.0"}, {"vscode", "0.31.4"},
}
