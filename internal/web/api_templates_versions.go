package web

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-dev/gantry/internal/store"
)

// apiTemplateVersion is one version of a template as admins manage it.
type apiTemplateVersion struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	Title   string `json:"title"`
	// Status is draft, published or retired.
	Status      string     `json:"status"`
	Digest      string     `json:"digest"`
	CreatedBy   string     `json:"createdBy"`
	CreatedAt   time.Time  `json:"createdAt"`
	PublishedBy string     `json:"publishedBy,omitempty"`
	PublishedAt *time.Time `json:"publishedAt"`
}

func apiTemplateVersionOf(tv store.TemplateVersion) apiTemplateVersion {
	return apiTemplateVersion{Name: tv.Name, Version: tv.Version, Kind: tv.Kind, Title: tv.Title, Status: versionStatus(tv), Digest: tv.Digest,
		CreatedBy: tv.CreatedBy, CreatedAt: tv.CreatedAt, PublishedBy: tv.PublishedBy, PublishedAt: tv.PublishedAt}
}

// apiTemplateVersionList is a template's versions, as its admin page lists them.
type apiTemplateVersionList struct {
	Versions []apiTemplateVersion `json:"versions"`
}

// apiTemplatesVersions lists every version of a template, for admins.
func (h *handler) apiTemplatesVersions(c *gin.Context) {
	history, err := h.Catalog.History(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err)
		return
	}
	if len(history) == 0 {
		h.fail(c, errPageNotFound)
		return
	}
	out := apiTemplateVersionList{Versions: make([]apiTemplateVersion, 0, len(history))}
	for _, tv := range history {
		out.Versions = append(out.Versions, apiTemplateVersionOf(tv))
	}
	c.JSON(http.StatusOK, out)
}
