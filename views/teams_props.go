package views

import "time"

// Team form fields, also the keys of TeamForm.Errors.
const (
	FieldTeamName         = "name"
	FieldTeamDisplayName  = "display_name"
	FieldTeamCostCenter   = "cost_center"
	FieldTeamMemberGroups = "member_groups"
	FieldTeamLeadGroups   = "lead_groups"
	FieldTeamCeilings     = "ceilings"
	// FieldTeamCeilingPrefix prefixes ceiling inputs: ceiling/<flavor>/<resource>.
	FieldTeamCeilingPrefix = "ceiling/"
)

// TeamsAdminProps is the admins' team list with the create form.
type TeamsAdminProps struct {
	Teams []TeamRow
	Form  TeamForm
}

// TeamRow is one team as listed for admins.
type TeamRow struct {
	Name, DisplayName, CostCenter string
	MemberGroups, LeadGroups      []string
	RetiredAt                     *time.Time
}

// TeamForm is the create or edit form as typed; groups one per line.
type TeamForm struct {
	Name, DisplayName, CostCenter string
	MemberGroups, LeadGroups      string
	Ceilings                      []CeilingField
	Errors                        map[string]string
}

// CeilingField is the lead-approval ceiling of one flavor and resource.
type CeilingField struct {
	Flavor, Resource, Value string
}

// TeamEditProps is one team's edit page.
type TeamEditProps struct {
	Team TeamRow
	Form TeamForm
}

// AuditProps is the admins' audit log browser.
type AuditProps struct {
	Filter  AuditFilter
	Entries []AuditRow
	// NextURL links the next (older) page; empty on the last page.
	NextURL string
	Actions []string
	Error   string
}

// AuditFilter is the filter form as typed; dates as YYYY-MM-DD.
type AuditFilter struct {
	Actor, Action, Team, From, To string
}

// AuditRow is one audit entry.
type AuditRow struct {
	ID                                 int64
	At                                 time.Time
	Actor, Action, Target, Detail, Via string
}

func ceilingName(c CeilingField) string {
	return FieldTeamCeilingPrefix + c.Flavor + "/" + c.Resource
}
