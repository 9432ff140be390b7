// Command serve runs package walletd on -addr until it is killed, and
// prints its URL once it listens.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"idemlab/grader/conform/testdata/walletd"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("walletd: http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, walletd.New()))
}
