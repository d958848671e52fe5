// Command etcd is a thin wrapper around go.etcd.io/etcd/server/v3/etcdmain,
// identical to the upstream server/main.go. It lives in its own Go module so
// that etcd's dependency versions do not mix with the API server's.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
