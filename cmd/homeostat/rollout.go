package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func newRollout(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "Manage the rollout of a Deployment"}
	var toRevision int64
	var watch bool
	deploymentArg := func(args []string) (string, error) {
		if len(args) != 1 {
			return "", errors.New("name one deployment: deployment/NAME")
		}
		kind, name, ok := strings.Cut(args[0], "/")
		if !ok {
			return args[0], nil
		}
		if k := strings.ToLower(kind); k != "deployment" && k != "deployments" && k != "deploy" && k != "deployments.apps" {
			return "", fmt.Errorf("rollout works on deployments, not %s", kind)
		}
		return name, nil
	}
	sub := func(use, short string, run func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error) *cobra.Command {
		return &cobra.Command{Use: use + " deployment/NAME", Short: short, RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := c.ResourceFor(cmd.Context(), "deployments.apps")
			if err != nil {
				return err
			}
			return run(cmd.Context(), c, res, name, cmd.OutOrStdout())
		}}
	}
	status := sub("status", "Watch a rollout until it completes or fails", func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error {
		return rolloutStatus(ctx, c, res, g.namespace, name, watch, out)
	})
	status.Flags().BoolVarP(&watch, "watch", "w", true, "wait for the rollout to finish")
	history := sub("history", "List the revisions of a Deployment", func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error {
		revs, err := revisions(ctx, c, g.namespace, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "deployment.apps/%s\n", name)
		tw := newTabWriter(out)
		tw.row("REVISION", "REPLICASET", "CHANGE-CAUSE")
		for _, r := range revs {
			tw.row(strconv.FormatInt(r.revision, 10), r.obj.Metadata.Name, orNone(kinds.ChangeCause(&r.obj.Metadata)))
		}
		tw.flush()
		return nil
	})
	undo := sub("undo", "Roll back to the previous (or a given) revision", func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error {
		return rollback(ctx, c, res, g.namespace, name, toRevision, out)
	})
	undo.Flags().Int64Var(&toRevision, "to-revision", 0, "revision to roll back to (default: the one before the current)")
	pause := sub("pause", "Stop rolling out changes to the template", func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error {
		_, err := c.Patch(ctx, res, g.namespace, name, []byte(`{"spec":{"paused":true}}`))
		if err == nil {
			fmt.Fprintf(out, "deployment.apps/%s paused\n", name)
		}
		return err
	})
	resume := sub("resume", "Resume rolling out", func(ctx context.Context, c *client.Client, res client.Resource, name string, out io.Writer) error {
		_, err := c.Patch(ctx, res, g.namespace, name, []byte(`{"spec":{"paused":false}}`))
		if err == nil {
			fmt.Fprintf(out, "deployment.apps/%s resumed\n", name)
		}
		return err
	})
	cmd.AddCommand(status, history, undo, pause, resume)
	return cmd
}

type revision struct {
	revision int64
	obj      *object.Object
}

// revisions lists the ReplicaSets a Deployment owns, oldest first.
func revisions(ctx context.Context, c *client.Client, ns, name string) ([]revision, error) {
	dres, err := c.ResourceFor(ctx, "deployments.apps")
	if err != nil {
		return nil, err
	}
	d, err := c.Get(ctx, dres, ns, name)
	if err != nil {
		return nil, err
	}
	rsRes, err := c.ResourceFor(ctx, "replicasets.apps")
	if err != nil {
		return nil, err
	}
	l, err := c.List(ctx, rsRes, ns, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []revision
	for _, rs := range l.Items {
		if ref, ok := rs.Metadata.ControllerOf(); !ok || ref.UID != d.Metadata.UID {
			continue
		}
		n := kinds.Revision(&rs.Metadata)
		out = append(out, revision{n, rs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].revision < out[j].revision })
	return out, nil
}

// rollback puts an earlier ReplicaSet's template back into the Deployment,
// which the controller then rolls out as the newest revision.
func rollback(ctx context.Context, c *client.Client, res client.Resource, ns, name string, to int64, out io.Writer) error {
	revs, err := revisions(ctx, c, ns, name)
	if err != nil {
		return err
	}
	if len(revs) == 0 {
		return fmt.Errorf("deployment %s has no revisions yet", name)
	}
	var target *revision
	for i := range revs {
		r := &revs[i]
		if (to == 0 && i == len(revs)-2) || (to != 0 && r.revision == to) {
			target = r
		}
	}
	if target == nil {
		if to == 0 {
			return fmt.Errorf("deployment %s has no previous revision", name)
		}
		return fmt.Errorf("deployment %s has no revision %d (see rollout history)", name, to)
	}
	var spec kinds.ReplicaSetSpec
	if err := target.obj.DecodeSpec(&spec); err != nil {
		return err
	}
	delete(spec.Template.Metadata.Labels, "pod-template-hash")
	// The template is replaced whole, as kubectl does: a merge would keep
	// what the current template has and the old one lacks (an annotation),
	// and roll out a template that is neither.
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": spec.Template}})
	if err != nil {
		return err
	}
	if err := c.Do(ctx, http.MethodPatch, res.Path(ns, name), patch, "application/json-patch+json", &object.Object{}); err != nil {
		return err
	}
	fmt.Fprintf(out, "deployment.apps/%s rolled back to revision %d\n", name, target.revision)
	return nil
}

// rolloutStatus reports progress until the rollout completes (exit 0) or
// exceeds its progress deadline (an error).
func rolloutStatus(ctx context.Context, c *client.Client, res client.Resource, ns, name string, watch bool, out io.Writer) error {
	last := ""
	check := func(d *object.Object) (bool, error) {
		var spec kinds.DeploymentSpec
		var st kinds.DeploymentStatus
		_ = d.DecodeSpec(&spec)
		_ = d.DecodeStatus(&st)
		want := kinds.Int32(spec.Replicas, 1)
		msg := ""
		done := false
		switch {
		case st.ObservedGeneration < d.Metadata.Generation:
			msg = "Waiting for deployment spec update to be observed..."
		case progressFailed(st):
			return true, fmt.Errorf("deployment %q exceeded its progress deadline", name)
		case spec.Paused:
			msg = fmt.Sprintf("deployment %q is paused; resume it to continue", name)
			done = true
		case st.UpdatedReplicas < want:
			msg = fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", name, min(st.UpdatedReplicas, st.AvailableReplicas), want)
		case st.Replicas > st.UpdatedReplicas:
			msg = fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", name, st.Replicas-st.UpdatedReplicas)
		case st.AvailableReplicas < st.UpdatedReplicas:
			msg = fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", name, st.AvailableReplicas, st.UpdatedReplicas)
		default:
			msg = fmt.Sprintf("deployment %q successfully rolled out", name)
			done = true
		}
		if msg != last {
			fmt.Fprintln(out, msg)
			last = msg
		}
		return done, nil
	}
	d, err := c.Get(ctx, res, ns, name)
	if err != nil {
		return err
	}
	if done, err := check(d); done || err != nil || !watch {
		return err
	}
	ch, err := c.Watch(ctx, res, ns, name, client.ListOptions{}, d.Metadata.ResourceVersion)
	if err != nil {
		return err
	}
	for ev := range ch {
		if ev.Status != nil {
			return ev.Status
		}
		if ev.Type == object.Deleted {
			return fmt.Errorf("deployment %q was deleted", name)
		}
		if done, err := check(ev.Object); done || err != nil {
			return err
		}
	}
	return ctx.Err()
}

func progressFailed(st kinds.DeploymentStatus) bool {
	c := object.FindCondition(st.Conditions, "Progressing")
	return c != nil && c.Status == object.ConditionFalse && c.Reason == "ProgressDeadlineExceeded"
}

func newScale(g *globals) *cobra.Command {
	var replicas int32
	cmd := &cobra.Command{
		Use:   "scale (deployment|replicaset)/NAME --replicas N",
		Short: "Set the number of replicas",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("replicas") || replicas < 0 {
				return errors.New("--replicas N (0 or more) is required")
			}
			kind, names := splitKindName(args)
			if len(names) == 0 {
				return errors.New("name what to scale: deployment/NAME")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := resolveKind(cmd.Context(), c, kind)
			if err != nil {
				return err
			}
			if res.Kind != "Deployment" && res.Kind != "ReplicaSet" {
				return fmt.Errorf("%s cannot be scaled; scale a deployment or a replicaset", res.Plural)
			}
			for _, n := range names {
				if _, err := c.Patch(cmd.Context(), res, g.namespace, n, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s scaled\n", kindName(res), n)
			}
			return nil
		},
	}
	cmd.Flags().Int32Var(&replicas, "replicas", 0, "the new number of replicas")
	return cmd
}
