package conf

import "fmt"

// Lint reports rules and sections that can never decide anything, as
// *RuleError values (the file is valid; these are warnings):
//   - a section that an earlier section always pre-empts (VMA consults only
//     the first section that matches the program and id, so a section after
//     "application-id * *" is never used);
//   - a rule that an earlier rule of the same section and role always
//     pre-empts (first match wins).
func (rs *RuleSet) Lint() []error {
	var out []error
	for i, s := range rs.Sections {
		for _, e := range rs.Sections[:i] {
			if e.preempts(s) {
				out = append(out, &RuleError{File: s.File, Line: s.Line, Msg: fmt.Sprintf(
					"section `%s` is never used: the earlier section `%s` (%s) applies to every program and id it does, and only the first matching section decides",
					s, e, e.Where())})
				break
			}
		}
		for role := range s.roles {
			list := s.roles[role]
			for j, r := range list {
				for _, e := range list[:j] {
					if e.covers(r) {
						out = append(out, &RuleError{File: r.File, Line: r.Line, Msg: fmt.Sprintf(
							"rule `%s` never matches: the earlier rule `%s` (%s) matches everything it does",
							r.Text, e.Text, e.Where())})
						break
					}
				}
			}
		}
	}
	return out
}

// preempts reports whether section s applies whenever section o does.
func (s *Section) preempts(o *Section) bool {
	return (s.prog.any || s.Program == o.Program) && (s.ID == "*" || s.ID == o.ID)
}

// covers reports whether rule r matches every socket rule o matches.
func (r *Rule) covers(o *Rule) bool {
	if !r.First.covers(o.First) {
		return false
	}
	if !r.HasSecond {
		return true
	}
	return o.HasSecond && r.Second.covers(o.Second)
}
