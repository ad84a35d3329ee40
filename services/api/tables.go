package api

import (
	"mime"
	"net/http"
	"strings"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
	"github.com/homeostat/homeostat/table"
)

// tableRequest is what a client asking for a Table wants in it.
type tableRequest struct {
	include string
}

// asTable says whether the client asks for a meta.k8s.io Table (kubectl get
// does, in its Accept header), and what its rows should carry.
func asTable(r *http.Request) (*tableRequest, *apiError) {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" || params["as"] != "Table" {
			continue
		}
		if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
			continue
		}
		inc := r.URL.Query().Get("includeObject")
		if err := table.CheckInclude(inc); err != nil {
			return nil, badRequest("%v", err)
		}
		return &tableRequest{include: inc}, nil
	}
	return nil, nil
}

// writeTable answers with objects of the request's kind as a Table.
func writeTable(w http.ResponseWriter, ref *resourceRef, tr *tableRequest, items []*object.Object, meta object.ListMeta) *apiError {
	t, err := table.New(columnsOf(ref.res), items, table.Options{Include: tr.include, ResourceVersion: meta.ResourceVersion, Continue: meta.Continue})
	if err != nil {
		return newError(http.StatusInternalServerError, object.ReasonInternalError, "rendering the table: %v", err)
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// columnsOf are the columns kubectl get shows for a kind: a custom kind's
// declared ones, or Name and Age; a built-in kind's as Kubernetes has them.
func columnsOf(res *schemas.Resource) []table.Column {
	if res.StoredAs != nil {
		return storedColumns(res.StoredAs)
	}
	if !res.Custom {
		return table.Columns(res.Kind)
	}
	if len(res.PrinterColumns) == 0 {
		return table.Default
	}
	return table.Printed(res.PrinterColumns)
}

// storedColumns are the columns of a resource served in another shape:
// those of its stored kind, read from the object in that kind's shape.
func storedColumns(stored *schemas.Resource) []table.Column {
	cols := table.Columns(stored.Kind)
	out := make([]table.Column, len(cols))
	for i, c := range cols {
		cell := c.Cell
		c.Cell = func(o *object.Object, _ map[string]any) any {
			core := kinds.EventFromV1(o)
			return cell(core, table.DocOf(core))
		}
		out[i] = c
	}
	return out
}
