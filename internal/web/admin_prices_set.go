package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/catalog/catalogadmin"
	"github.com/gantry-dev/gantry/views"
)

// adminPricesSet stores a price per GPU-hour from its effective date.
func (h *handler) adminPricesSet(c *gin.Context) {
	form := views.PriceFormValues{Flavor: c.PostForm(views.FieldPriceFlavor), USDPerHour: c.PostForm(views.FieldPriceUSD),
		EffectiveFrom: c.PostForm(views.FieldPriceFrom)}
	flavor, resource, _ := strings.Cut(form.Flavor, "|")
	p, err := h.Catalog.SetPrice(c.Request.Context(), catalogActor(c), catalogadmin.PriceForm{Flavor: flavor, Resource: resource,
		USDPerHour: form.USDPerHour, EffectiveFrom: form.EffectiveFrom})
	if problems, ok := problemsOf(err); ok {
		h.renderAdminPrices(c, http.StatusUnprocessableEntity, form, problems)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.addFlash(c, views.FlashSuccess, fmt.Sprintf("%s %s costs %.2f USD per GPU-hour from %s.", p.Flavor, p.Resource, p.USDPerHour.Float(),
		p.EffectiveFrom.UTC().Format(time.DateTime)+" UTC"))
	redirectSeeOther(c, "/admin/prices")
}
