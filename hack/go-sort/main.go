// Records the order Go's sort.Slice leaves equal elements in: for each JSON line on stdin (a list of keys), the
// positions of the input, sorted by key with sort.Slice.  Used by record.py for tests/golden/go-sort.jsonl.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var keys []int
		if err := json.Unmarshal(in.Bytes(), &keys); err != nil {
			panic(err)
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(i, j int) bool { return keys[order[i]] < keys[order[j]] })
		if err := out.Encode(order); err != nil {
			panic(err)
		}
	}
}
