package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
)

func newAuth(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "auth", Short: "Inspect authentication and authorization"}
	cmd.AddCommand(newWhoami(g), newCanI(g))
	return cmd
}

func newWhoami(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Print who the API takes you for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var r struct {
				Status struct {
					UserInfo struct {
						Username string   `json:"username"`
						Groups   []string `json:"groups"`
					} `json:"userInfo"`
				} `json:"status"`
			}
			body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
			if err := c.Do(cmd.Context(), http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", body, "application/json", &r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Username: %s\nGroups:   %s\n", r.Status.UserInfo.Username, strings.Join(r.Status.UserInfo.Groups, ", "))
			return nil
		},
	}
}

// canIAttributes are the resource or non-resource attributes of a
// SelfSubjectAccessReview.
type canIAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
	Path        string `json:"path,omitempty"`
}

func newCanI(g *globals) *cobra.Command {
	var (
		subresource   string
		allNamespaces bool
		quiet         bool
	)
	cmd := &cobra.Command{
		Use:   "can-i VERB (TYPE[.GROUP][/SUBRESOURCE] [NAME] | /PATH)",
		Short: "Say whether an action is allowed: yes (status 0) or no (status 1)",
		Long: "Asks the API, through a SelfSubjectAccessReview, whether you (or the user of --as) may do\n" +
			"an action; the answer comes from the same code that decides every request.",
		Example: "  homeostat auth can-i create deployments -n team\n" +
			"  homeostat auth can-i get pods/log web-1\n" +
			"  homeostat auth can-i list nodes --as alice\n" +
			"  homeostat auth can-i get /metrics",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			attrs, nonResource, err := canIRequest(cmd, c, g.namespace, allNamespaces, subresource, args)
			if err != nil {
				return err
			}
			spec := map[string]any{"resourceAttributes": attrs}
			if nonResource {
				spec = map[string]any{"nonResourceAttributes": map[string]string{"verb": attrs.Verb, "path": attrs.Path}}
			}
			body, _ := json.Marshal(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec})
			var r struct {
				Status struct {
					Allowed bool   `json:"allowed"`
					Reason  string `json:"reason"`
				} `json:"status"`
			}
			if err := c.Do(cmd.Context(), http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, "application/json", &r); err != nil {
				return err
			}
			if !quiet {
				answer := "no"
				if r.Status.Allowed {
					answer = "yes"
				}
				if r.Status.Reason != "" && !r.Status.Allowed {
					answer += " - " + r.Status.Reason
				}
				fmt.Fprintln(cmd.OutOrStdout(), answer)
			}
			if !r.Status.Allowed {
				return exitStatus(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&subresource, "subresource", "", "subresource to ask about, such as log or status")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "ask about every namespace at once")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing: the exit status is the answer")
	return cmd
}

// canIRequest reads can-i's arguments: a path, or a resource type that the
// server's discovery resolves (one it does not serve is asked about as
// written, with a warning, as kubectl does).
func canIRequest(cmd *cobra.Command, c *client.Client, namespace string, all bool, sub string, args []string) (canIAttributes, bool, error) {
	a := canIAttributes{Verb: args[0]}
	if strings.HasPrefix(args[1], "/") {
		if len(args) > 2 {
			return a, false, fmt.Errorf("a path (%s) takes no NAME", args[1])
		}
		a.Path = args[1]
		return a, true, nil
	}
	typ, s, hasSub := strings.Cut(args[1], "/")
	if hasSub {
		if sub != "" && sub != s {
			return a, false, fmt.Errorf("%s names subresource %q, --subresource %q", args[1], s, sub)
		}
		sub = s
	}
	a.Subresource = sub
	if len(args) > 2 {
		a.Name = args[2]
	}
	if !all {
		a.Namespace = namespace
	}
	if typ == "*" {
		a.Resource, a.Group = "*", "*"
		return a, false, nil
	}
	res, err := c.ResourceFor(cmd.Context(), typ)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Warning: the server does not serve a resource type %q\n", typ)
		a.Resource, a.Group, _ = strings.Cut(typ, ".")
		return a, false, nil
	}
	a.Resource, a.Group = res.Plural, res.Group
	if !res.Namespaced {
		a.Namespace = ""
	}
	return a, false, nil
}
