// Command kubectl is kubectl itself, built from the k8s.io/kubectl module,
// for the tests that drive Homeostat with the real client
// (testenv.Kubectl builds it). It is no part of the homeostat binary.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
