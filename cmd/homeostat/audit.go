package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/audit"
)

func newAudit(g *globals) *cobra.Command {
	var (
		user, verb, since, output string
		limit                     int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit log: who did what, and what was refused",
		Long: "Prints the API's audit records, oldest first: every write and every refused request\n" +
			"(and every read, when the API runs with --audit-level All).",
		Example: "  homeostat audit --since 1h\n  homeostat audit --user alice --verb delete\n  homeostat audit -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("--output must be json, not %q", output)
			}
			q := url.Values{}
			for k, v := range map[string]string{"user": user, "verb": verb, "since": since} {
				if v != "" {
					q.Set(k, v)
				}
			}
			q.Set("limit", strconv.Itoa(limit))
			c, err := g.client()
			if err != nil {
				return err
			}
			var list audit.EventList
			if err := c.Do(cmd.Context(), http.MethodGet, "/apis/homeostat.io/v1/auditevents?"+q.Encode(), nil, "", &list); err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tUSER\tVERB\tRESOURCE\tNAME\tCODE\tTRACE")
			for _, e := range list.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.RequestReceivedTimestamp.Local().Format(time.RFC3339),
					auditWho(&e), e.Verb, auditResource(&e), auditName(&e), e.ResponseStatus.Code, e.Annotations[audit.AnnotationTraceID])
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&user, "user", "", "only requests of this user (or acting as it)")
	f.StringVar(&verb, "verb", "", "only requests with this verb (create, update, patch, delete, …)")
	f.StringVar(&since, "since", "", "only requests newer than this: a duration (1h) or an RFC 3339 time")
	f.IntVar(&limit, "limit", 500, "the latest this many records")
	f.StringVarP(&output, "output", "o", "", "output format: json (audit.k8s.io/v1 EventList)")
	return cmd
}

func auditWho(e *audit.Event) string {
	if e.ImpersonatedUser != nil {
		return e.User.Username + " as " + e.ImpersonatedUser.Username
	}
	return e.User.Username
}

func auditResource(e *audit.Event) string {
	if e.ObjectRef == nil {
		u, _, _ := strings.Cut(e.RequestURI, "?")
		return u
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.APIGroup != "" {
		r += "." + e.ObjectRef.APIGroup
	}
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

func auditName(e *audit.Event) string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Namespace != "" && e.ObjectRef.Namespace != e.ObjectRef.Name {
		return e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
	}
	return e.ObjectRef.Name
}
