package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.mockData.cvPath, "cv", "", "")
	flag.BoolVar(&o.showOutdatedReleases, "show", false, "")
	flag.StringVar(&o.rawVersion, "version", "", "")
	flag.BoolVar(&o.quiet, "quiet", false, "")
	accept := flag.String("accept", "", "")
	flag.Parse()
	if *accept != "" {
		o.accept = strings.Split(*accept, ",")
	}
	var stdout, stderr bytes.Buffer
	o.Out = &stdout
	o.ErrOut = &stderr
	result := map[string]string{}
	if err := o.Complete(); err != nil {
		result["complete_error"] = err.Error()
	} else if err := o.Run(context.Background()); err != nil {
		result["error"] = err.Error()
	}
	result["out"] = stdout.String()
	result["err"] = stderr.String()
	json.NewEncoder(os.Stdout).Encode(result)
}
