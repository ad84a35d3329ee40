package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/table"
)

func resolveKind(ctx context.Context, c *client.Client, kind string) (client.Resource, error) {
	// kubectl also accepts KIND/NAME; callers split that first.
	return c.ResourceFor(ctx, kind)
}

func kindName(r client.Resource) string { return strings.ToLower(r.Kind) + groupSuffix(r) }

// splitKindName accepts "deployment/web" as well as "deployment web".
func splitKindName(args []string) (kind string, names []string) {
	if len(args) == 0 {
		return "", nil
	}
	if k, n, ok := strings.Cut(args[0], "/"); ok {
		return k, append([]string{n}, args[1:]...)
	}
	return args[0], args[1:]
}

type getOptions struct {
	output        string
	selector      string
	fieldSelector string
	watch         bool
	allNamespaces bool
}

func newGet(g *globals) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...]",
		Short: "List objects as a table, or print them as YAML or JSON",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), g, o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, yaml, json or name")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	f.StringVar(&o.fieldSelector, "field-selector", "", "field selector, e.g. spec.nodeName=node-1")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, watch for changes")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	return cmd
}

func runGet(ctx context.Context, g *globals, o *getOptions, args []string, out io.Writer) error {
	switch o.output {
	case "", "wide", "yaml", "json", "name":
	default:
		return fmt.Errorf("--output must be wide, yaml, json or name, not %q", o.output)
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	kind, names := splitKindName(args)
	if kinds := strings.Split(kind, ","); len(kinds) > 1 {
		// kubectl's "get deploy,rs,pods": one table after another.
		if len(names) > 0 || o.watch {
			return fmt.Errorf("name one kind to get objects by name or to watch")
		}
		for i, k := range kinds {
			if i > 0 && (o.output == "" || o.output == "wide") {
				fmt.Fprintln(out)
			}
			if err := runGet(ctx, g, o, []string{k}, out); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := resolveKind(ctx, c, kind)
	if err != nil {
		return err
	}
	ns := g.namespace
	if o.allNamespaces {
		ns = ""
	}
	gt := getter{c: c, res: res, ns: ns, o: o}
	items, rv, err := gt.fetch(ctx, names)
	if err != nil {
		return err
	}
	p := newPrinter(res, o.output, o.allNamespaces && res.Namespaced, out)
	if p.table() {
		p.cols = kindColumns(ctx, c, res)
	}
	if len(names) == 0 && (o.output == "yaml" || o.output == "json") && !o.watch {
		return p.list(res, items, rv)
	}
	if len(items) == 0 && !o.watch && p.table() {
		if ns != "" && res.Namespaced {
			fmt.Fprintf(out, "No %s found in namespace %s.\n", res.Plural, ns)
		} else {
			fmt.Fprintf(out, "No %s found.\n", res.Plural)
		}
		return nil
	}
	for _, it := range items {
		if err := p.print(it); err != nil {
			return err
		}
	}
	p.flush()
	if !o.watch {
		return nil
	}
	name := ""
	if len(names) == 1 {
		name = names[0]
		rv = items[0].Metadata.ResourceVersion
	}
	return gt.follow(ctx, name, rv, p)
}

// getter reads one kind in one namespace (or all) for get.
type getter struct {
	c   *client.Client
	res client.Resource
	ns  string
	o   *getOptions
}

func (g getter) selection() client.ListOptions {
	return client.ListOptions{LabelSelector: g.o.selector, FieldSelector: g.o.fieldSelector}
}

// fetch reads the named objects, or lists them, with the list's revision.
func (g getter) fetch(ctx context.Context, names []string) ([]*object.Object, string, error) {
	if len(names) == 0 {
		l, err := g.c.List(ctx, g.res, g.ns, g.selection())
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Metadata.ResourceVersion, nil
	}
	var items []*object.Object
	for _, n := range names {
		obj, err := g.c.Get(ctx, g.res, g.ns, n)
		if err != nil {
			return nil, "", err
		}
		items = append(items, obj)
	}
	return items, "", nil
}

// follow prints every change after rv until ctx ends (get -w).
func (g getter) follow(ctx context.Context, name, rv string, p *printer) error {
	ch, err := g.c.Watch(ctx, g.res, g.ns, name, g.selection(), rv)
	if err != nil {
		return err
	}
	for ev := range ch {
		if ev.Status != nil {
			return ev.Status
		}
		if err := p.print(ev.Object); err != nil {
			return err
		}
		p.flush()
	}
	return ctx.Err()
}

// printer renders objects as a table (aligned by tabwriter) or documents.
type printer struct {
	res    client.Resource
	format string
	withNS bool
	out    io.Writer
	tw     *tabWriter
	header bool
	cols   []table.Column // the kind's; by default a built-in kind's
}

func newPrinter(res client.Resource, format string, withNS bool, out io.Writer) *printer {
	return &printer{res: res, format: format, withNS: withNS, out: out, tw: newTabWriter(out)}
}

func (p *printer) table() bool { return p.format == "" || p.format == "wide" }

func (p *printer) print(o *object.Object) error {
	switch p.format {
	case "json":
		b, err := json.MarshalIndent(o, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.out, "---\n%s", b)
		return err
	case "name":
		_, err := fmt.Fprintf(p.out, "%s/%s\n", kindName(p.res), o.Metadata.Name)
		return err
	}
	cols := columnsFor(p.cols, p.res.Kind, p.format == "wide")
	if !p.header {
		p.header = true
		var hs []string
		if p.withNS {
			hs = append(hs, "NAMESPACE")
		}
		for _, c := range cols {
			hs = append(hs, strings.ToUpper(c.Name))
		}
		p.tw.row(hs...)
	}
	var cells []string
	if p.withNS {
		cells = append(cells, o.Metadata.Namespace)
	}
	doc := docOf(o)
	for _, c := range cols {
		cells = append(cells, fmt.Sprint(c.Cell(o, doc)))
	}
	p.tw.row(cells...)
	return nil
}

func (p *printer) list(res client.Resource, items []*object.Object, rv string) error {
	l := object.List{APIVersion: "v1", Kind: "List", Metadata: object.ListMeta{ResourceVersion: rv}, Items: items}
	if l.Items == nil {
		l.Items = []*object.Object{}
	}
	var b []byte
	var err error
	if p.format == "json" {
		b, err = json.MarshalIndent(l, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(l)
	}
	if err != nil {
		return err
	}
	_, err = p.out.Write(b)
	return err
}

func (p *printer) flush() { p.tw.flush() }

func docOf(o *object.Object) map[string]any {
	b, _ := json.Marshal(o)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func newAPIResources(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "api-resources",
		Short: "List the kinds the server serves, custom ones included",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			all, err := c.Resources(cmd.Context())
			if err != nil {
				return err
			}
			tw := newTabWriter(cmd.OutOrStdout())
			tw.row("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")
			for _, r := range all {
				tw.row(r.Plural, strings.Join(r.ShortNames, ","), r.APIVersion(), fmt.Sprint(r.Namespaced), r.Kind)
			}
			tw.flush()
			return nil
		},
	}
}
