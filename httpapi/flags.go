package httpapi

import (
	"maps"
	"net/http"

	fm "github.com/foldermirror/foldermirror"
	"github.com/gin-gonic/gin"
)

// getConfigurationFlags is operation 1: a domain's flags, custom values over
// defaults. A caller reads its own domain's flags only, a security code its
// domain's.
func (s *Server) getConfigurationFlags(c *gin.Context) {
	cl := callerOf(c)
	name := c.Query("domain")
	if name == "" {
		name = cl.Domain // a security code's domain for a code
	}
	dom := s.domain(name)
	if dom == nil {
		s.writeError(c, fm.Errorf(fm.ENOTFOUND, "Domain %s is not configured.", name))
		return
	}
	if dom.Name != cl.Domain {
		s.writeError(c, fm.Errorf(fm.EFORBIDDEN, "The flags of %s may be read by its own users only.", dom.Name))
		return
	}
	flags := map[string]string{}
	if asked := nonEmpty(c.QueryArray("flags")); len(asked) > 0 {
		for _, name := range asked {
			if v, ok := dom.Flags[name]; ok {
				flags[name] = v
			}
		}
	} else {
		maps.Copy(flags, dom.Flags)
	}
	c.JSON(http.StatusOK, configurationFlagsJSON{ConfigurationsFlags: flags, Kind: kindConfigurationFlags})
}

func nonEmpty(values []string) []string {
	out := values[:0:0]
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
