package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/acceptance"
	"github.com/gantry-dev/gantry/internal/auth"
	"github.com/gantry-dev/gantry/internal/money"
	"github.com/gantry-dev/gantry/internal/problem"
	"github.com/gantry-dev/gantry/views"
)

// adminAcceptanceSave stores a pool's acceptance definition from the form.
func (h *handler) adminAcceptanceSave(c *gin.Context) {
	u, _ := auth.CurrentUser(c)
	d, errs := acceptanceDefinitionForm(c)
	if len(errs) == 0 {
		_, err := h.Acceptance.SaveDefinition(c.Request.Context(), acceptancePerson(c, u), d)
		if !errors.As(err, &errs) && err != nil {
			h.fail(c, err)
			return
		}
	}
	if len(errs) > 0 {
		props, err := h.acceptanceAdminProps(c)
		if err != nil {
			h.fail(c, err)
			return
		}
		props.Errors, props.ErrorPool = errs, d.Pool
		if !slicesHasPool(props.Definitions, d.Pool) {
			props.New = acceptanceDefinitionView(d)
		}
		h.render(c, http.StatusUnprocessableEntity, views.AcceptanceAdminPage(h.nav(c, "acceptance"), props))
		return
	}
	h.addFlash(c, views.FlashSuccess, "Acceptance definition of pool "+d.Pool+" saved.")
	redirectSeeOther(c, "/admin/acceptance")
}

func slicesHasPool(defs []views.AcceptanceDefinitionView, pool string) bool {
	for _, d := range defs {
		if d.Pool == pool {
			return true
		}
	}
	return false
}

// acceptanceDefinitionForm reads the definition form; numbers that do not
// read come back as field errors.
func acceptanceDefinitionForm(c *gin.Context) (acceptance.Definition, problem.Fields) {
	errs := problem.Fields{}
	str := func(name string) string { return strings.TrimSpace(c.PostForm(name)) }
	num := func(name, words string) float64 {
		v, err := strconv.ParseFloat(str(name), 64)
		if err != nil {
			errs[name] = words
		}
		return v
	}
	integer := func(name, words string) int {
		v, err := strconv.Atoi(str(name))
		if err != nil {
			errs[name] = words
		}
		return v
	}
	d := acceptance.Definition{
		Pool: str("pool"), Team: str("team"), Template: str("template"), Image: str("image"),
		GPUs: integer("gpus", "GPUs per node is a whole number."), Nodes: integer("nodes", "Nodes is a whole number."),
		Dataset: str("dataset"), Weights: str("weights"),
		TrainingWindowSeconds:     integer("trainingWindowSeconds", "The training window is a whole number of seconds."),
		Benchmark:                 c.PostForm("benchmark") == "on",
		MaxQueueWaitSeconds:       num("maxQueueWaitSeconds", "The longest queue wait is a number of seconds."),
		MaxDataPullSeconds:        num("maxDataPullSeconds", "The slowest data pull is a number of seconds."),
		MinBusBandwidthGBps:       num("minBusBandwidthGBps", "The lowest bus bandwidth is a number of GB/s."),
		MaxCheckpointWriteSeconds: num("maxCheckpointWriteSeconds", "The longest checkpoint write is a number of seconds."),
		MaxRecoverySeconds:        num("maxRecoverySeconds", "The longest recovery is a number of seconds."),
		MinSamplesPerSecond:       num("minSamplesPerSecond", "The lowest throughput is a number of samples per second."),
		BaselineLabel:             str("baselineLabel"),
		MinBaselineRatio:          num("minBaselineRatio", "The least ratio to the baseline is a number."),
	}
	price, err := money.Parse(str("baselineUsdPerMillionSamples"))
	if err != nil {
		errs["baselineUsdPerMillionSamples"] = "The baseline price is a dollar amount with at most six decimals."
	}
	d.BaselineUSDPerMillionSamples = price
	return d, errs
}
