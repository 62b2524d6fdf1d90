// Package dashboard is the web dashboard of the oversight service: the
// server-rendered pages where an organisation's people (Administrators and
// Reviewers) sign in, manage API keys and users, and decide review tasks.
//
// Pages are html/template over embedded templates and assets; every page
// works without JavaScript, which only improves (the copy button). Handlers
// call the same stores and services as the JSON APIs (org, reviewapi,
// sources, people), so no rule of the service is written twice. Every
// state-changing request passes Go's cross-origin protection, and every page
// carries a Content-Security-Policy without inline scripts.
package dashboard
