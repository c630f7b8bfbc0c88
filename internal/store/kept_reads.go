package store

import "github.com/gantry-dev/gantry/internal/roster"

// keptReads are the reads every launch makes, and every API call the
// first two: the caller's token and its owner, the teams, the template
// and the image allowlist; and the account every signed-in page view
// resolves its user from (the users table announces on the tokens'
// topic). A launch read them in two round trips before it created
// anything; at 50 launches a second, beside the API server on two cores,
// the slowest launches waited about 400 ms on those and their record.
// Each is kept until a change of its table is told by this process's
// writers (Changes.Told) or announced by the database (migration 00033),
// and at most keptMaxAge.
type keptReads struct {
	changes   *Changes
	tokens    *Kept[APIToken]
	owners    *Kept[User]
	users     *Kept[User]
	teams     *Kept[[]roster.Team]
	team      *Kept[roster.Team]
	templates *Kept[TemplateVersion]
	allowlist *Kept[[]string]
}

// KeepReads has the store keep the reads of every launch and API call
// (tokens and their owners, teams, templates, the image allowlist) while
// changes listens. A revoked token is refused at once by this process,
// and by the others as soon as the database's notice reaches them. It is
// to be called before the store is used.
func (s *Store) KeepReads(changes *Changes) {
	s.kept = keptReads{
		changes:   changes,
		tokens:    NewToldKept[APIToken](changes, TopicTokens),
		owners:    NewToldKept[User](changes, TopicTokens),
		users:     NewToldKept[User](changes, TopicTokens),
		teams:     NewToldKept[[]roster.Team](changes, TopicTeams),
		team:      NewToldKept[roster.Team](changes, TopicTeams),
		templates: NewToldKept[TemplateVersion](changes, TopicTemplates),
		allowlist: NewToldKept[[]string](changes, TopicImageAllowlist),
	}
}

// told tells the kept reads that this process changed topics' tables (or
// may have: a failed write is told too).
func (s *Store) told(topics ...string) { s.kept.changes.Told(topics...) }
