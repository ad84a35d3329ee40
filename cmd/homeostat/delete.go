package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
)

func newDelete(g *globals) *cobra.Command {
	var files []string
	var cascade string
	var grace int64
	cmd := &cobra.Command{
		Use:   "delete (KIND NAME... | -f FILE)",
		Short: "Delete objects by kind and name, or those a manifest describes",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := g.client()
			if err != nil {
				return err
			}
			opts := client.DeleteOptions{}
			switch cascade {
			case "background":
				opts.PropagationPolicy = "Background"
			case "foreground":
				opts.PropagationPolicy = "Foreground"
			case "orphan":
				opts.PropagationPolicy = "Orphan"
			default:
				return fmt.Errorf("--cascade must be background, foreground or orphan, not %q", cascade)
			}
			if cmd.Flags().Changed("grace-period") {
				opts.GracePeriodSeconds = &grace
			}
			targets, err := deleteTargets(cmd, g, c, files, args)
			if err != nil {
				return err
			}
			var failed error
			for _, t := range targets {
				o, err := c.Delete(ctx, t.res, t.namespace, t.name, opts)
				if err != nil {
					printError(err)
					failed = errors.New("some deletions failed")
					continue
				}
				verb := "deleted"
				if o.Metadata.DeletionTimestamp != nil && (len(o.Metadata.Finalizers) > 0 || o.Metadata.DeletionGracePeriodSeconds != nil) {
					verb = "deletion started"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", kindName(t.res), t.name, verb)
			}
			return failed
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory, or - for stdin")
	cmd.Flags().StringVar(&cascade, "cascade", "background", "what happens to dependents: background, foreground or orphan")
	cmd.Flags().Int64Var(&grace, "grace-period", 0, "seconds a pod's processes get to stop (0 stops them at once)")
	return cmd
}

type deleteTarget struct {
	res       client.Resource
	namespace string
	name      string
}

// deleteTargets resolves what to delete: the objects a manifest names, or KIND NAME....
func deleteTargets(cmd *cobra.Command, g *globals, c *client.Client, files, args []string) ([]deleteTarget, error) {
	ctx := cmd.Context()
	var targets []deleteTarget
	if len(files) > 0 {
		srcs, err := readManifests(files, cmd.InOrStdin())
		if err != nil {
			return nil, err
		}
		for _, s := range srcs {
			var h header
			if err := json.Unmarshal(s.doc.JSON, &h); err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
			res, err := c.ResourceForKind(ctx, h.APIVersion, h.Kind)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
			ns := h.Metadata.Namespace
			if ns == "" {
				ns = g.namespace
			}
			targets = append(targets, deleteTarget{res, ns, h.Metadata.Name})
		}
		return targets, nil
	}
	kind, names := splitKindName(args)
	if len(names) == 0 {
		return nil, errors.New("delete needs KIND NAME..., KIND/NAME or -f FILE")
	}
	res, err := resolveKind(ctx, c, kind)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		targets = append(targets, deleteTarget{res, g.namespace, name})
	}
	return targets, nil
}
