package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/manifest"
	"github.com/homeostat/homeostat/object"
)

// source is one decoded manifest with where it came from.
type source struct {
	file string
	doc  manifest.Document
}

func (s source) String() string { return fmt.Sprintf("%s (document %d)", s.file, s.doc.Index) }

// readManifests reads FILE, every .yaml/.yml/.json file of DIR, or stdin for "-".
func readManifests(paths []string, stdin io.Reader) ([]source, error) {
	var out []source
	for _, p := range paths {
		if p == "-" {
			docs, err := manifest.Decode(stdin)
			if err != nil {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			for _, d := range docs {
				out = append(out, source{"stdin", d})
			}
			continue
		}
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return nil, err
		} else if st.IsDir() {
			files = nil
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				switch strings.ToLower(filepath.Ext(e.Name())) {
				case ".yaml", ".yml", ".json":
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			sort.Strings(files)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			docs, err := manifest.DecodeBytes(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, d := range docs {
				out = append(out, source{f, d})
			}
		}
	}
	return out, nil
}

type header struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   object.Meta `json:"metadata"`
}

func newApply(g *globals) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update objects from manifests (YAML or JSON, multi-document)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("apply needs -f FILE, -f DIR or -f -")
			}
			srcs, err := readManifests(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			return applyAll(cmd.Context(), c, g.namespace, srcs, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest file, directory, or - for stdin")
	return cmd
}

// applyAll applies every document, reporting each, and fails at the end if any failed.
func applyAll(ctx context.Context, c *client.Client, namespace string, srcs []source, out io.Writer) error {
	failed := 0
	for _, s := range srcs {
		var h header
		if err := json.Unmarshal(s.doc.JSON, &h); err != nil {
			printError(fmt.Errorf("%s: %w", s, err))
			failed++
			continue
		}
		if h.APIVersion == "" || h.Kind == "" {
			printError(fmt.Errorf("%s: apiVersion and kind are required", s))
			failed++
			continue
		}
		res, err := c.ResourceForKind(ctx, h.APIVersion, h.Kind)
		if err != nil {
			printError(fmt.Errorf("%s: %w", s, err))
			failed++
			continue
		}
		o, result, err := c.Apply(ctx, res, namespace, s.doc.JSON)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: ", s)
			printError(err)
			failed++
			continue
		}
		fmt.Fprintf(out, "%s/%s %s\n", strings.ToLower(res.Kind)+groupSuffix(res), o.Metadata.Name, result)
		if res.Kind == "ResourceDefinition" {
			c.Refresh()
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d objects failed", failed, len(srcs))
	}
	return nil
}

func groupSuffix(r client.Resource) string {
	if r.Group == "" {
		return ""
	}
	return "." + r.Group
}
