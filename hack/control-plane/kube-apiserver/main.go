// Command kube-apiserver is a thin wrapper around the upstream
// k8s.io/kubernetes/cmd/kube-apiserver entry point, so that the real API
// server can be built from Go modules (k8s.io/kubernetes cannot be installed
// with `go install` because its go.mod uses replace directives).
//
// It mirrors cmd/kube-apiserver/apiserver.go of the pinned release.
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
