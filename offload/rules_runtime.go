package offload

import (
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
)

// errNotOneRule is AddRule's answer to a line that is not exactly one "use" rule.
var errNotOneRule = errors.New("want one use rule in libvma.conf syntax")

// AddRule parses line, one "use" rule in libvma.conf syntax, and puts it first among the rules
// that decide for this process (VMA's add_conf_rule). Sockets decided before keep their decision;
// the next decisions see the rule first.
func (e *Engine) AddRule(line string) error {
	rs, errs := conf.ParseRules("add_conf_rule", strings.NewReader(line))
	if len(errs) > 0 {
		return fmt.Errorf("add rule %q: %w", line, errors.Join(errs...))
	}
	if rs.NumRules() != 1 || len(rs.Sections) != 1 {
		return fmt.Errorf("add rule %q: %w", line, errNotOneRule)
	}
	r := rs.Sections[0].Rules[0]
	e.section() // the file's section for this process, once
	for {
		old := e.sect.Load()
		if e.sect.CompareAndSwap(old, old.WithFirst(r)) {
			break
		}
	}
	e.log.Info("rule added at run time", zap.String("rule", r.String()))
	return nil
}
