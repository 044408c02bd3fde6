package conf

// WithFirst returns a copy of section s (nil: the implicit "application-id * *" section, empty)
// with r before all its rules, as VMA's add_conf_rule puts a rule added at run time first in the
// list. s itself is not changed, so sockets deciding against it meanwhile see it whole.
func (s *Section) WithFirst(r *Rule) *Section {
	n := &Section{Program: "*", ID: "*", prog: compileGlob("*")}
	if s != nil {
		c := *s
		n = &c
	}
	n.Rules = append([]*Rule{r}, n.Rules...)
	if r.Role < numRoles {
		n.roles[r.Role] = append([]*Rule{r}, n.roles[r.Role]...)
	}
	r.Section = n
	return n
}
