// Command etcd is etcd's own server, built from the pinned module for the local stack.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
