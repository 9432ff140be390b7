// Command serve runs package payserver on -addr until it is killed, and
// prints its URL once it listens.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"idemlab/grader/conform/testdata/payserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	naive := flag.Bool("naive", false, "ignore the Idempotency-Key: every request makes a payment")
	payments := flag.String("payments", "", "keep the payments in this file, across restarts (the keys stay in memory)")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := payserver.New()
	if *payments != "" {
		if s, err = payserver.Open(*payments); err != nil {
			log.Fatal(err)
		}
	}
	s.Naive = *naive
	fmt.Printf("payserver: http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, s))
}
