// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at
// the version go.mod pins. It does what upstream's go.etcd.io/etcd/v3 main
// package does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
