// Command serve runs one audit example (package auditserve) on -addr
// until it is killed. Once it listens, it resets the lab's bank with
// seed 1 and prints the environment of the lab's conform profile
// (LAB_TOKEN_A=…, one a line), then its URL.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"

	"idemlab/grader/conform/testdata/auditserve"
	"idemlab/kit/bank"
	"idemlab/kit/labclient"
	"idemlab/kit/server"
)

func main() {
	name := flag.String("example", "final", fmt.Sprintf("the audit example to serve, one of %v", auditserve.Names()))
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	ctx := context.Background()
	srv, err := auditserve.New(ctx, *name, server.NewAdminToken())
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- http.Serve(ln, srv.Handler()) }()
	url := "http://" + ln.Addr().String()
	customers, err := labclient.New(url+"/", srv.AdminToken(), nil).Reset(ctx, bank.DefaultParams())
	if err != nil {
		log.Fatal(err)
	}
	env, err := auditserve.Profile(customers)
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Printf("%s=%s\n", k, env[k])
	}
	fmt.Printf("auditserve %s: %s\n", *name, url)
	log.Fatal(<-served)
}
