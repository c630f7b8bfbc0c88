package web

// teamsChanged drops the cached session users after a team was created
// or edited (its groups decide who is in it), so that the change shows on
// this replica's next page view; other replicas see it within
// auth.SessionUserTTL.
func (h *handler) teamsChanged() {
	if h.Auth != nil {
		h.Auth.ForgetUsers()
	}
}
