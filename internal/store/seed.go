package store

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
