// Records what Go's text/tabwriter writes for each operation of the cases on stdin (JSON lines:
// {"minwidth":N,"padding":N,"discard":B,"ops":[["w","text"],["f"]]}); prints one JSON line per case: the
// output of each operation, in order.  Used by record.py for tests/golden/go-tabwriter.jsonl.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"text/tabwriter"
)

type testCase struct {
	Minwidth int        `json:"minwidth"`
	Padding  int        `json:"padding"`
	Discard  bool       `json:"discard"`
	Ops      [][]string `json:"ops"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c testCase
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		var flags uint
		if c.Discard {
			flags = tabwriter.DiscardEmptyColumns
		}
		var buf bytes.Buffer
		w := tabwriter.NewWriter(&buf, c.Minwidth, 2, c.Padding, ' ', flags)
		written := []string{}
		for _, op := range c.Ops {
			if op[0] == "w" {
				w.Write([]byte(op[1]))
			} else {
				w.Flush()
			}
			written = append(written, buf.String())
			buf.Reset()
		}
		if err := out.Encode(written); err != nil {
			panic(err)
		}
	}
}
